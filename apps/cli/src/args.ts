import { MAX_EVENT_DATE, MAX_EVENT_MS, VENUES, type Venue } from '@booktape/domain';
import { venueFromAnyName, venueModule, venueModules, type AnyVenueModule } from '@booktape/venues';

/**
 * The rules every command applies to the names users type: venues, market and asset ids,
 * times, output formats. Pure, so they are tested without services; each failure is a
 * UsageError whose message names the option and says what it takes, and the rule checked
 * is the one the message states (the ids are the domain's own validators).
 */

export class UsageError extends Error {}

/** How a venue may be named on the command line: the API's names, the venues' own, or a/b. */
export const VENUE_CHOICES = [...venueModules().map((m) => m.short), ...VENUES, ...venueModules().map((m) => m.ownName)].join('|');

/** `a`, `exchange-a`, `polymarket` → exchange-a; `b`, `exchange-b`, `kalshi` → exchange-b (any case). */
export function parseVenueArg(raw: string | undefined, name = '--venue'): Venue {
  const venue = raw === undefined ? null : venueFromAnyName(raw);
  if (venue === null) throw new UsageError(`${name} must be one of ${VENUE_CHOICES.split('|').join(', ')}, got ${JSON.stringify(raw ?? '')}`);
  return venue;
}

export const CONDITION_ID_RULE = venueModule('exchange-a').market.rule;
export const TICKER_RULE = venueModule('exchange-b').market.rule;

/**
 * What differs between the venues on the command line, looked up by venue so the commands
 * never compare venue names: how a market is named and checked, whether books are per
 * outcome token inside a market (and markets have slugs), and the names of the answer's parts.
 */
export interface VenueShape {
  /** The long name in messages. */
  label: string;
  /** The option naming a market, the API's parameter name (`--condition-id`), and the other venue's. */
  marketOption: '--condition-id' | '--ticker';
  otherMarketOption: '--condition-id' | '--ticker';
  marketRule: string;
  normaliseMarket(raw: string): string | null;
  /** What a `--prefix` of the market list may be, and its rule in words. */
  prefix: RegExp;
  prefixRule: string;
  /** Books are per outcome token (`--asset-id`) inside a market, and markets have slugs: exchange A. */
  tokens: boolean;
  /** The SDK's client of the venue, its market parameter, and the market field of a list entry. */
  sdk: 'exchangeA' | 'exchangeB';
  marketParam: 'conditionId' | 'ticker';
  marketField: 'condition_id' | 'ticker';
  /** The two level lists of a book answer, in the order a CSV shows them. */
  bookSides: readonly [string, string];
}

/** The command line's part of a venue's registry entry (libs/venues), and its SDK names. */
const shape = (m: AnyVenueModule, sdk: Pick<VenueShape, 'marketOption' | 'otherMarketOption' | 'sdk' | 'marketParam' | 'marketField'>): VenueShape => ({
  label: `${m.label} (${m.ownName})`,
  ...sdk,
  marketRule: m.market.rule,
  normaliseMarket: m.market.normalise,
  prefix: m.market.prefix,
  prefixRule: m.market.prefixRule,
  tokens: m.tokens,
  bookSides: m.bookSides,
});

export const VENUE_SHAPES: Record<Venue, VenueShape> = {
  'exchange-a': shape(venueModule('exchange-a'), { marketOption: '--condition-id', otherMarketOption: '--ticker', sdk: 'exchangeA', marketParam: 'conditionId', marketField: 'condition_id' }),
  'exchange-b': shape(venueModule('exchange-b'), { marketOption: '--ticker', otherMarketOption: '--condition-id', sdk: 'exchangeB', marketParam: 'ticker', marketField: 'ticker' }),
};

/** A market of a venue: an exchange A condition id (full length) or an exchange B ticker, normalised. */
export function parseMarketArg(venue: Venue, raw: string | undefined, name: string): string {
  const shape = VENUE_SHAPES[venue];
  if (raw === undefined) throw new UsageError(`${name} is required (${shape.marketRule})`);
  const m = shape.normaliseMarket(raw);
  if (m === null) throw new UsageError(`${name} ${JSON.stringify(raw)} is not ${shape.marketRule}`);
  return m;
}

/** An exchange A outcome token id (the venue's are decimal; letters are kept for other sources). */
export function parseAssetArg(raw: string, name: string): string {
  if (!/^[0-9A-Za-z]{1,128}$/.test(raw)) throw new UsageError(`${name} ${JSON.stringify(raw)} is not an outcome token id (1 to 128 letters or digits)`);
  return raw;
}

export function parseDateArg(raw: string | undefined, name: string): string {
  if (raw === undefined) throw new UsageError(`${name} is required (YYYY-MM-DD)`);
  const t = Date.parse(`${raw}T00:00:00Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(raw) || Number.isNaN(t) || new Date(t).toISOString().slice(0, 10) !== raw) throw new UsageError(`${name} must be a date YYYY-MM-DD, got ${JSON.stringify(raw)}`);
  if (raw < '1970-01-01' || raw > MAX_EVENT_DATE) throw new UsageError(`${name} must be a date from 1970-01-01 to ${MAX_EVENT_DATE}, got ${raw}`);
  return raw;
}

export const TIME_RULE = 'YYYY-MM-DD, an ISO 8601 time with a zone, or Unix seconds (below 10^11) or milliseconds';
const ISO = /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,3})?)?(Z|[+-]\d{2}:?\d{2})$/i;

/**
 * A time option → Unix milliseconds. `edge` says which end of the unit given counts: a
 * window's start is the unit's first millisecond; its inclusive end (`last`) is the unit's
 * last, so `--to 2026-03-01` covers that whole day and `--to 1772409599` that whole second
 * (an end in seconds that stopped at .000 would drop the rest of the second).
 */
export function parseTimeArg(raw: string | undefined, name: string, edge: 'first' | 'last' = 'first'): number {
  if (raw === undefined) throw new UsageError(`${name} is required (${TIME_RULE})`);
  const s = raw.trim();
  let ms: number;
  let unitMs: number;
  const iso = ISO.exec(s);
  if (/^\d{4}-\d{2}-\d{2}$/.test(s)) {
    ms = Date.parse(`${parseDateArg(s, name)}T00:00:00Z`);
    unitMs = 86_400_000;
  } else if (iso) {
    ms = Date.parse(s);
    // The calendar date must exist as written (Date.parse rolls 02-30 over to March).
    if (Number.isNaN(ms) || !Number.isFinite(Date.parse(`${iso[1]}T00:00:00Z`)) || new Date(`${iso[1]}T00:00:00Z`).toISOString().slice(0, 10) !== iso[1]) {
      throw new UsageError(`${name} must be ${TIME_RULE}, got ${JSON.stringify(raw)}`);
    }
    unitMs = iso[5] !== undefined ? 10 ** (3 - (iso[5].length - 1)) : iso[4] !== undefined ? 1000 : 60_000;
  } else if (/^\d{1,16}$/.test(s)) {
    const n = Number(s);
    const seconds = n < 1e11;
    ms = seconds ? n * 1000 : n;
    unitMs = seconds ? 1000 : 1;
  } else {
    throw new UsageError(`${name} must be ${TIME_RULE}, got ${JSON.stringify(raw)}`);
  }
  const out = edge === 'last' ? ms + unitMs - 1 : ms;
  if (ms < 0 || out > MAX_EVENT_MS) throw new UsageError(`${name} must be from 1970 to ${MAX_EVENT_DATE}, got ${JSON.stringify(raw)}`);
  return out;
}

export type Format = 'json' | 'ndjson' | 'csv';

export function parseFormatArg(raw: string | undefined): Format {
  const f = raw ?? 'json';
  if (f !== 'json' && f !== 'ndjson' && f !== 'csv') throw new UsageError(`--format must be json, ndjson or csv, got ${JSON.stringify(f)}`);
  return f;
}

export function parseIntArg(raw: string | undefined, name: string, min: number, max: number): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d{1,7}$/.test(raw) || Number(raw) < min || Number(raw) > max) throw new UsageError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  return Number(raw);
}

/** Text the API takes as a label or a user id: trimmed, 1..max characters, no control characters. */
export function parseTextArg(raw: string | undefined, name: string, max: number): string {
  if (raw === undefined) throw new UsageError(`${name} is required`);
  const s = raw.trim();
  if (s === '' || s.length > max || /[\u0000-\u001f\u007f]/.test(s)) throw new UsageError(`${name} must be 1 to ${max} characters without control characters, got ${JSON.stringify(raw)}`);
  return s;
}

/** The API's key ids (POST /keys answers them): key_ + 24 hex digits. */
export function parseKeyIdArg(raw: string | undefined): string {
  if (raw === undefined) throw new UsageError('keys revoke needs the key id (key_ + 24 hex digits; see keys list)');
  if (!/^key_[0-9a-f]{24}$/.test(raw)) throw new UsageError(`${JSON.stringify(raw)} is not a key id (key_ + 24 hex digits; see keys list)`);
  return raw;
}
