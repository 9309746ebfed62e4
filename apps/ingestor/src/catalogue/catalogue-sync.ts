import type { Logger } from '@booktape/config';
import { MarketCatalogueRepository, sameCatalogueMarket, type CatalogueMarket, type ClickHouse } from '@booktape/storage';
import { fetchGammaEventsPage, fetchGammaMarketsByConditionIds, type GammaRequestOptions } from '@booktape/venues';

/**
 * Keeps the exchange A market catalogue (migration 005) current from the metadata API:
 * one pass on start, then one every `intervalMs`. A pass reads every open event with its
 * markets (`/events?closed=false`, paged), writes the markets whose entry changed, and then
 * refreshes the markets the catalogue still holds as open but the venue no longer lists
 * (they closed or moved since the last pass) by condition id. A failed pass is logged and
 * retried with back-off (first `retryMs`, doubling up to the interval); nothing here ever
 * throws out of the loop.
 */

export interface CatalogueSyncOptions extends Omit<GammaRequestOptions, 'signal'> {
  /** Between successful passes. */
  intervalMs: number;
  /** First retry after a failed pass; doubles on every further failure, up to intervalMs. Default 30 s. */
  retryMs?: number;
  /** Events per page. Default 100. */
  pageSize?: number;
  /** At most this many events per pass (a guard against an API that pages forever). Default 1,000,000. */
  maxEvents?: number;
  /** At most this many no-longer-listed markets refreshed per pass. Default 10,000. */
  maxStaleRefresh?: number;
}

export interface CatalogueSyncDeps {
  ch: ClickHouse;
  log: Logger;
  options: CatalogueSyncOptions;
}

export interface CataloguePassResult {
  events: number;
  markets: number;
  /** Entries written (new or changed). */
  written: number;
  /** Markets no longer listed as open, refreshed by condition id. */
  refreshed: number;
  /** False when the event list was cut short (maxEvents); stale markets are then not refreshed. */
  complete: boolean;
  ms: number;
}

export interface CatalogueSyncStatus {
  running: boolean;
  passes: number;
  failures: number;
  consecutiveFailures: number;
  lastSuccessAt: string | null;
  lastError: string | null;
  lastPass: CataloguePassResult | null;
}

export function createCatalogueSync(deps: CatalogueSyncDeps) {
  const { ch, log, options } = deps;
  const repo = new MarketCatalogueRepository(ch);
  const pageSize = Math.max(1, Math.min(options.pageSize ?? 100, 500));
  const maxEvents = options.maxEvents ?? 1_000_000;
  const maxStale = options.maxStaleRefresh ?? 10_000;
  const retryMs = Math.max(1, options.retryMs ?? 30_000);
  const status: CatalogueSyncStatus = { running: false, passes: 0, failures: 0, consecutiveFailures: 0, lastSuccessAt: null, lastError: null, lastPass: null };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let abort: AbortController | undefined;
  let current: Promise<unknown> | undefined;

  /** Writes the entries that differ from what the catalogue holds; returns how many. */
  async function writeChanged(markets: CatalogueMarket[]): Promise<number> {
    let written = 0;
    for (let i = 0; i < markets.length; i += 1000) {
      const batch = markets.slice(i, i + 1000);
      const known = await repo.findByConditionIds(batch.map((m) => m.conditionId));
      const changed = batch.filter((m) => {
        const k = known.get(m.conditionId);
        return !k || !sameCatalogueMarket(k, m);
      });
      await repo.upsert(changed);
      written += changed.length;
    }
    return written;
  }

  async function pass(signal: AbortSignal): Promise<CataloguePassResult> {
    const started = Date.now();
    const req: GammaRequestOptions = { ...options, signal };
    const seen = new Map<string, CatalogueMarket>();
    const seenEvents = new Set<string>();
    let complete = false;
    for (let offset = 0; seenEvents.size < maxEvents; offset += pageSize) {
      const page = await fetchGammaEventsPage({ closed: false, limit: pageSize, offset }, req);
      let fresh = 0;
      for (const e of page.events) {
        if (seenEvents.has(e.slug)) continue;
        seenEvents.add(e.slug);
        fresh++;
        for (const m of e.markets) seen.set(m.conditionId, m);
      }
      // A short page is the end; a page of nothing new means the API ignores `offset`.
      if (page.size < pageSize || (fresh === 0 && page.size > 0)) {
        complete = page.size < pageSize;
        break;
      }
    }
    let written = await writeChanged([...seen.values()]);
    let refreshed = 0;
    if (complete) {
      const stale = (await repo.openConditionIds()).filter((c) => !seen.has(c)).slice(0, maxStale);
      if (stale.length > 0) {
        const fresh = await fetchGammaMarketsByConditionIds(stale, req);
        refreshed = fresh.length;
        written += await writeChanged(fresh);
      }
    }
    return { events: seenEvents.size, markets: seen.size, written, refreshed, complete, ms: Date.now() - started };
  }

  function schedule(ms: number): void {
    if (stopped) return;
    timer = setTimeout(() => void run(), ms);
    timer.unref?.();
  }

  async function run(): Promise<void> {
    if (stopped) return;
    abort = new AbortController();
    status.running = true;
    const p = pass(abort.signal);
    current = p.catch(() => undefined);
    try {
      const r = await p;
      status.passes++;
      status.consecutiveFailures = 0;
      status.lastSuccessAt = new Date().toISOString();
      status.lastError = null;
      status.lastPass = r;
      log.info(r, 'market catalogue refreshed');
      schedule(options.intervalMs);
    } catch (e) {
      if (stopped) return;
      status.failures++;
      status.consecutiveFailures++;
      status.lastError = (e as Error).message;
      const wait = Math.min(options.intervalMs, retryMs * 2 ** Math.min(status.consecutiveFailures - 1, 20));
      log.warn({ err: (e as Error).message, retryInMs: wait }, 'market catalogue refresh failed; retrying');
      schedule(wait);
    } finally {
      status.running = false;
    }
  }

  return {
    /** Starts the loop; the first pass runs at once, in the background. */
    start(): void {
      if (stopped || timer || current) return;
      schedule(0);
    },
    /** One pass now (tests, operators); throws what the pass throws. */
    syncOnce(): Promise<CataloguePassResult> {
      return pass(new AbortController().signal);
    },
    /** Stops the loop: cancels a pass in flight and waits for it to end. */
    async stop(): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      abort?.abort();
      await current;
    },
    status(): CatalogueSyncStatus {
      return { ...status };
    },
  };
}

export type CatalogueSync = ReturnType<typeof createCatalogueSync>;
