/**
 * An exchange A market as the market catalogue keeps it (and of the event it belongs to):
 * what the gamma client reads from the venue and the catalogue table stores (migration 005).
 */
export interface CatalogueMarket {
  /** `0x` + lower case. */
  conditionId: string;
  /** The venue's numeric market id, when known. */
  marketId: string | null;
  slug: string;
  question: string;
  active: boolean;
  closed: boolean;
  /** Outcome (CLOB) token ids in outcome order (YES first for binary markets); empty before the market is deployed. */
  tokenIds: string[];
  outcomes: string[];
  eventId: string | null;
  eventSlug: string | null;
  eventTitle: string | null;
}
