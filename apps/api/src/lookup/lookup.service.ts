import type { Logger } from '@booktape/config';
import { SingleFlight } from '@booktape/domain';
import { compareCatalogueMarkets, type CatalogueMarket, type MarketCatalogueRepository } from '@booktape/storage';
import { fetchGammaEventBySlug, fetchGammaMarketsBySlug, type GammaRequestOptions } from '@booktape/venues';
import { LookupUnavailableError, UnavailableError } from '../http/errors.ts';
import { TtlMap } from '../http/result-cache.ts';
import { lookupPlan, type LookupAttempt, type SlugQuery } from './slug.ts';

/**
 * Slug lookup: the market catalogue first (kept by the ingestor), the live metadata API
 * when the catalogue misses, and what the live API answered written back to the catalogue.
 *
 * - The attempts of the query's plan (slug.ts) are tried in order against the catalogue;
 *   on a miss they are asked of the live API all at once (one timeout in all), and the
 *   first attempt in plan order that found something answers.
 * - An event with several markets answers `type: "event"` (title: the event's); one market
 *   answers `type: "market"` (title: its question), as the interface describes.
 * - A slug found is kept for `hitCacheMs` (a minute): a client walking pages by slug would
 *   otherwise ask the catalogue once or twice a page (about 10 ms each on the embedded store,
 *   a quarter of a small page). Only hits are kept, so a market listed a moment ago is found
 *   at once; a slug's market and tokens do not change at the venue.
 * - A slug the live API did not know is remembered for `missCacheMs`, so a flood of unknown
 *   slugs reaches the venue's API once per slug, not once per request; identical lookups
 *   in flight share one, and at most 16 live lookups run at once.
 * - "Cannot tell" is not "does not exist": null (a 404) only when the metadata API answered
 *   that nothing matches (or none is configured: the catalogue is all there is). A catalogue
 *   miss the metadata API could not answer (down, malformed answer, timed out) or could not
 *   be asked (16 live lookups already running) throws LookupUnavailableError (503
 *   `lookup_unavailable`, with Retry-After). A catalogue that cannot be read with no
 *   metadata API configured is a 503 `service_unavailable`.
 */

export interface SlugLookupResult {
  type: 'event' | 'market';
  /** The event's title (type event) or the market's question (type market). */
  eventTitle: string;
  eventSlug: string | null;
  markets: CatalogueMarket[];
  source: 'catalogue' | 'live';
}

export interface SlugLookupOptions {
  catalogue: MarketCatalogueRepository;
  log: Logger;
  /** The live metadata API; null = catalogue only. */
  gamma: { url: string; timeoutMs: number; fetch?: typeof fetch } | null;
  /** How long a slug unknown to the live API is not asked again. */
  missCacheMs: number;
  /** How long a slug found is answered without asking again (default a minute; 0: not kept). */
  hitCacheMs?: number;
}

/** Default of `hitCacheMs`. */
const HIT_TTL_MS = 60_000;
/** Retry-After of a lookup the metadata API failed (down, malformed, timed out). */
const RETRY_AFTER_FAILED_S = 5;
/** Retry-After of a lookup refused because 16 live lookups already run (they end within the timeout). */
const RETRY_AFTER_BUSY_S = 1;

function fromEvent(slug: string, title: string | null, markets: CatalogueMarket[]): Omit<SlugLookupResult, 'source'> | null {
  if (markets.length === 0) return null;
  const sorted = [...markets].sort(compareCatalogueMarkets);
  if (sorted.length > 1) return { type: 'event', eventTitle: title ?? sorted[0]!.eventTitle ?? slug, eventSlug: slug, markets: sorted };
  return fromMarkets(sorted);
}

function fromMarkets(markets: CatalogueMarket[]): Omit<SlugLookupResult, 'source'> | null {
  const sorted = [...markets].sort(compareCatalogueMarkets);
  const m = sorted[0];
  if (!m) return null;
  return { type: 'market', eventTitle: m.question || m.eventTitle || m.slug, eventSlug: m.eventSlug, markets: sorted };
}

/** What one live attempt found: its answer, and the event it read (all its markets). */
interface LiveAnswer {
  answer: Omit<SlugLookupResult, 'source'> | null;
  event: { slug: string; markets: CatalogueMarket[] } | null;
}

/** Live lookups at once per process; beyond this a catalogue miss is a 503 without asking. */
const MAX_LIVE_IN_FLIGHT = 16;

export class SlugLookupService {
  private readonly misses: TtlMap<true>;
  private readonly hits: TtlMap<SlugLookupResult>;
  private readonly inFlight = new SingleFlight<string, SlugLookupResult | null>();
  private liveInFlight = 0;

  constructor(private readonly opts: SlugLookupOptions) {
    this.misses = new TtlMap<true>(opts.missCacheMs, 10_000);
    this.hits = new TtlMap<SlugLookupResult>(opts.hitCacheMs ?? HIT_TTL_MS, 10_000);
  }

  /**
   * The answer for a query, or null when nothing matches (the metadata API said so). Throws
   * LookupUnavailableError (503 `lookup_unavailable`) when that cannot be told now, and
   * UnavailableError (503) when the catalogue cannot be read and nothing else can be asked.
   */
  lookup(q: SlugQuery): Promise<SlugLookupResult | null> {
    const plan = lookupPlan(q);
    // Keyed by the plan: every spelling of the same query (URL forms) shares one entry.
    const key = JSON.stringify(plan);
    const hit = this.hits.get(key);
    if (hit) return Promise.resolve(hit);
    return this.inFlight.run(key, async () => {
      const r = await this.resolve(plan, key);
      if (r) this.hits.set(key, r);
      return r;
    });
  }

  /**
   * Writes a live answer to the catalogue. An event lookup there reads "the markets whose
   * event is X", so a market is written only together with all the markets of its event
   * (asked for when the plan did not already fetch it); if the event cannot be read, the
   * market is not written and the next lookup asks the live API again.
   */
  private async writeBack(hit: Omit<SlugLookupResult, 'source'>, answers: LiveAnswer[], req: GammaRequestOptions): Promise<void> {
    const { catalogue, log } = this.opts;
    let markets = hit.markets;
    if (hit.type === 'market' && hit.eventSlug !== null) {
      let siblings = answers.find((r) => r.event?.slug === hit.eventSlug)?.event?.markets ?? null;
      if (siblings === null) siblings = (await fetchGammaEventBySlug(hit.eventSlug, req).catch(() => null))?.markets ?? null;
      if (siblings === null) return;
      const byId = new Map([...siblings, ...markets].map((m) => [m.conditionId, m]));
      markets = [...byId.values()];
    }
    try {
      await catalogue.upsert(markets);
    } catch (e) {
      log.warn({ err: (e as Error).message }, 'slug lookup: could not write the live answer to the market catalogue');
    }
  }

  private async resolve(plan: LookupAttempt[], key: string): Promise<SlugLookupResult | null> {
    const { catalogue, log, gamma } = this.opts;
    let catalogueFailed = false;
    try {
      for (const a of plan) {
        const found = a.kind === 'event' ? fromEvent(a.slug, null, await catalogue.findByEventSlug(a.slug)) : fromMarkets(await catalogue.findByMarketSlug(a.slug));
        if (found) return { ...found, source: 'catalogue' };
      }
    } catch (e) {
      catalogueFailed = true;
      log.warn({ err: (e as Error).message }, 'slug lookup: the market catalogue cannot be read; asking the metadata API');
    }

    if (gamma === null) {
      if (catalogueFailed) throw new UnavailableError('the market catalogue');
      return null;
    }
    if (this.misses.get(key)) return null;
    // A flood of distinct unknown slugs must not become a flood at the venue's API; what is
    // not asked is not known not to exist.
    if (this.liveInFlight >= MAX_LIVE_IN_FLIGHT) {
      const where = catalogueFailed ? 'the market catalogue cannot be read' : 'the slug is not in the market catalogue';
      throw new LookupUnavailableError(`${where} and the metadata API is busy with other lookups: retry shortly`, RETRY_AFTER_BUSY_S);
    }
    this.liveInFlight++;
    try {
      return await this.live(plan, key, catalogueFailed);
    } finally {
      this.liveInFlight--;
    }
  }

  private async live(plan: LookupAttempt[], key: string, catalogueFailed: boolean): Promise<SlugLookupResult | null> {
    const { log, gamma } = this.opts;
    if (gamma === null) return null;

    const req: GammaRequestOptions = { gammaUrl: gamma.url, timeoutMs: gamma.timeoutMs, ...(gamma.fetch ? { fetch: gamma.fetch } : {}) };
    const settled = await Promise.allSettled(
      plan.map(async (a): Promise<LiveAnswer> => {
        if (a.kind === 'market') {
          const markets = await fetchGammaMarketsBySlug(a.slug, req);
          return { answer: fromMarkets(markets), event: null };
        }
        const e = await fetchGammaEventBySlug(a.slug, req);
        return { answer: e ? fromEvent(e.slug, e.title, e.markets) : null, event: e ? { slug: e.slug, markets: e.markets } : null };
      }),
    );
    const answers = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const hit = answers.find((r) => r.answer !== null)?.answer ?? null;
    const failures = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (hit) {
      await this.writeBack(hit, answers, req);
      return { ...hit, source: 'live' };
    }
    if (failures.length > 0) {
      // One reading of the slug unanswered: it may be the one that exists.
      log.warn({ err: (failures[0]!.reason as Error)?.message }, 'slug lookup: the metadata API did not answer');
      const where = catalogueFailed ? 'the market catalogue cannot be read' : 'the slug is not in the market catalogue';
      throw new LookupUnavailableError(`${where} and the metadata API did not answer (down, malformed or timed out): whether the slug exists cannot be told now; retry later`, RETRY_AFTER_FAILED_S);
    }
    this.misses.set(key, true);
    return null;
  }
}
