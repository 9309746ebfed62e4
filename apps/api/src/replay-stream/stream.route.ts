import { Readable } from 'node:stream';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { VENUES as ALL_VENUES, type Venue } from '@booktape/domain';
import { venueModule } from '@booktape/venues';
import type { ReplayRow } from '@booktape/storage';
import { bookAt } from '@booktape/summaries';
import { KEY_SECURITY } from '../http/auth.ts';
import { ApiError, TooManyConcurrentError, errors, guard, notFound } from '../http/errors.ts';
import { MISSING, earliestMs, optionalField, parseInteger, q } from '../http/params.ts';
import { markCut } from '../http/slow-reader.ts';
import { daysOfWindow } from '../replay/replay.route.ts';
import { streamSessionError } from '../market-data/raw-page.ts';
import { dataFloor, VENUES, venueName } from '../market-data/venues.ts';
import type { Services } from '../services.ts';
import { mergedMessages, type SnapshotPlan, type VenueRows } from './merge.ts';
import { StreamBooks, type GapMessage, type Level, type Series } from './normalise.ts';
import {
  STREAM_DEFAULT_DEPTH,
  STREAM_MAX_DEPTH,
  STREAM_MAX_MARKETS,
  STREAM_MAX_SNAPSHOT_INSTANTS,
  parseInterval,
  parseMarkets,
  snapshotInstants,
  type StreamMarket,
} from './stream-params.ts';

/**
 * One merged, normalised stream of many markets of both venues (issue 25, point 2):
 *
 *   GET /api/v1/replay/stream?markets=exchange-a:<asset_id>,exchange-b:<ticker>&from=…&to=…
 *       [&snapshot_interval=60s[&depth=10]]
 *
 * NDJSON, streamed: a `start` line, each series' opening `book` (its book at `from`, rebuilt
 * from history), then the stored records of every series in one time order (merge.ts) as
 * book changes, books and trades in one shape (normalise.ts), gap markers, the top-`depth`
 * snapshots at every multiple of `snapshot_interval`, and an `end` line. docs/api.md,
 * "Merged replay stream".
 *
 * - Billing: a data endpoint (requireKey): one quota unit per UTC day of the window, paid
 *   when the answer was read to its end, like a bulk export.
 * - At most API_REPLAYS_PER_KEY (default 2) replays per key at once in this process,
 *   websocket replays included (429 `too_many_concurrent_requests`, limit `replays`),
 *   besides the plan's requests cap.
 * - Back-pressure: the body is pulled (Readable.from) only as fast as the socket takes
 *   it, so a slow client slows its own read; the reads hold at most two batches each (each
 *   sub-read a bounded query, ReplayRepository), nothing of the store while waiting on the
 *   client. A client that leaves aborts the reads at once; one that stops reading is
 *   dropped by the server's connection timeout.
 */

const STREAM_MAX_DAYS = 31;
const NDJSON = 'application/x-ndjson; charset=utf-8';
/** Bytes gathered into one write: lines are small, a write per line would cost more than the line. */
const CHUNK_BYTES = 64 * 1024;
/** Opening books rebuilt at once. */
const OPEN_PARALLEL = 4;


interface StreamQuery {
  markets: StreamMarket[];
  from: number;
  to: number;
  snapshot_interval?: number;
  depth?: number;
}

/** `markets`: repeated and/or comma-separated (the only query field that may repeat). */
const marketsField = z
  .union([z.string(), z.array(z.string())], { error: (iss) => (iss.input === undefined ? MISSING : 'must be text, repeated or comma-separated') })
  .transform((v, ctx): StreamMarket[] => {
    const r = parseMarkets(v);
    if (!r.ok) {
      ctx.addIssue({ code: 'custom', message: r.message });
      return z.NEVER;
    }
    return r.value;
  })
  .meta({
    description: `Series to replay, up to ${STREAM_MAX_MARKETS}: \`exchange-a:<asset_id>\` (an outcome token) or \`exchange-b:<ticker>\` (polymarket: and kalshi: too), repeated and/or comma-separated.`,
    example: 'exchange-a:71321045679252212594626385532706912750332728571942532289631379312455583992563,exchange-b:KXBTCD-26MAR0117-T84999.99',
  });

export const replayStreamRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { config, requireKey, replay, books, assetMarkets, coverage, outages } = services;
  // One count per key for both kinds of replay.
  const limiter = services.replaySlots;
  const cap = config.replaysPerKey === undefined ? 2 : config.replaysPerKey;

  const query = z
    .object({
      markets: marketsField,
      from: q.timestamp('Window start', 'start'),
      to: q.timestamp('Window end', 'end'),
      snapshot_interval: optionalField(parseInterval, 'Top-of-book snapshots of every series at each multiple of this interval since the epoch inside the window: 60s, 5m, 1h (a number alone is seconds), 1s to 24h. Default: none.'),
      depth: optionalField((r) => parseInteger(r, 1, STREAM_MAX_DEPTH), `Levels a side in each snapshot, 1 to ${STREAM_MAX_DEPTH}. Default ${STREAM_DEFAULT_DEPTH}; needs snapshot_interval.`, { type: 'integer', minimum: 1, maximum: STREAM_MAX_DEPTH }),
    })
    .superRefine((qs, ctx) => {
      const fail = (param: string, message: string) => ctx.addIssue({ code: 'custom', path: [param], message });
      const { from, to } = qs as { from: number; to: number };
      if (from > to) return fail('from', 'from must not be after to');
      if (daysOfWindow(from, to) > STREAM_MAX_DAYS) fail('to', `a stream spans at most ${STREAM_MAX_DAYS} UTC days: ask again for the rest`);
      for (const v of VENUES) {
        const floor = dataFloor(v, config);
        if (floor !== undefined && from < earliestMs(floor) && (qs.markets as StreamMarket[]).some((m) => m.venue === v.venue)) fail('from', `${venueName(v)} data is served from ${floor} on`);
      }
      if (qs.depth !== undefined && qs.snapshot_interval === undefined) fail('depth', 'applies with snapshot_interval only');
      if (qs.snapshot_interval !== undefined) {
        const n = snapshotInstants(from, to, qs.snapshot_interval as number).count;
        if (n > STREAM_MAX_SNAPSHOT_INSTANTS) fail('snapshot_interval', `gives ${n} snapshot instants over the window: at most ${STREAM_MAX_SNAPSHOT_INSTANTS} (a longer interval or a shorter window)`);
      }
    });

  /** Exchange A assets → their condition ids: the rollups know rolled-up assets, the window's raw records the rest. */
  async function marketsOfAssets(assets: string[], fromMs: number, toMs: number): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (assets.length === 0) return out;
    const known = await Promise.all(assets.map((a) => assetMarkets.marketOfAsset(a)));
    assets.forEach((a, i) => known[i] && out.set(a, known[i]!));
    const rest = assets.filter((a) => !out.has(a));
    if (rest.length > 0) for (const [a, m] of await replay.marketsOfAssets(rest, fromMs, toMs)) out.set(a, m);
    return out;
  }

  /** Capture gaps and declared outages over the window, one marker per series they touch, by time. */
  async function gapMarkers(series: Series[], fromMs: number, toMs: number): Promise<GapMessage[]> {
    const out: Array<GapMessage & { order: number }> = [];
    for (const venue of ALL_VENUES) {
      const mine = series.map((s, order) => ({ s, order })).filter((x) => x.s.venue === venue);
      if (mine.length === 0) continue;
      const ids = [...new Set(mine.flatMap((x) => [x.s.market, x.s.id]))];
      const [gaps, declared] = await Promise.all([coverage.captureGaps(venue, fromMs, toMs + 1, ids), outages.list({ venue, fromMs, toMs: toMs + 1 })]);
      const marker = (x: { s: Series; order: number }, kind: GapMessage['kind'], start: number, until: number | null, detail: string) =>
        out.push({ type: 'gap', market: x.s.name, venue, ts: Math.max(fromMs, start), venue_ts: null, received_at: null, ingest_seq: null, kind, from: start, until, detail, order: x.order });
      for (const g of gaps) {
        const named = new Set(g.markets.map((m) => m.toLowerCase()));
        for (const x of mine) {
          if (named.size > 0 && !named.has(x.s.market.toLowerCase()) && !named.has(x.s.id.toLowerCase())) continue;
          marker(x, g.reason === 'seq gap' ? 'sequence_gap' : 'disconnect', g.started_ms, g.ended_ms, `capture: ${g.reason} on connection ${g.connection_id}${g.ended_ms === null ? ' (still open)' : ''}`);
        }
      }
      for (const d of declared) for (const x of mine) marker(x, 'outage', d.start_ms, d.end_ms, `declared outage ${d.id}: ${d.reason}`);
    }
    out.sort((a, b) => a.ts - b.ts || a.order - b.order || a.from - b.from);
    return out.map(({ order: _order, ...m }) => m);
  }

  /** The first row of a venue's read, before the status line: a store that fails gets a proper answer. */
  async function openVenue(rows: AsyncGenerator<ReplayRow>): Promise<VenueRows> {
    try {
      const first = await guard('ClickHouse', () => rows.next());
      return { it: rows, first };
    } catch (e) {
      await rows.return(undefined).catch(() => undefined);
      throw e;
    }
  }

  app.get(
    '/replay/stream',
    {
      schema: {
        summary: 'Merged replay stream: many markets of both venues in one time order, normalised (NDJSON)',
        description:
          'NDJSON, streamed: a `start` line; the opening `book` of every series (its book at `from`); then the stored records of every series merged by (event time, ingest_seq), ' +
          'exchange A first where both are equal, as `book` (a full book), `book_change` (levels after the change), `trade`, and `gap` markers (sequence gaps, capture disconnects, declared outages); ' +
          'with `snapshot_interval`, a top-`depth` `snapshot` of every series at each multiple of the interval; an `end` line last. ' +
          'Exchange B books are the YES book: NO bids are asks at 1 − price. Each message carries `ts`, `venue_ts`, `received_at` and `ingest_seq`. ' +
          `One quota unit per UTC day of the window (at most ${STREAM_MAX_DAYS}); at most API_REPLAYS_PER_KEY (default 2) streams per key at once. docs/api.md, "Merged replay stream".`,
        tags: ['replay'],
        security: KEY_SECURITY,
        produces: ['application/x-ndjson'],
        querystring: query,
        response: { 200: z.string().describe('NDJSON: one message per line (docs/api.md, "Merged replay stream").'), ...errors },
      },
      onRequest: requireKey,
      config: { quotaUnits: (qs: unknown) => daysOfWindow((qs as StreamQuery).from, (qs as StreamQuery).to) },
      // A HEAD would read (and bill) the whole window for nothing.
      exposeHeadRoute: false,
    },
    async (req, reply) => {
      const qs = req.query as unknown as StreamQuery;
      const { from, to } = qs;
      const key = req.apiKey!;
      const release = limiter.tryAcquire(key.key_id, cap);
      if (release === null) {
        reply.header('retry-after', '1');
        throw new TooManyConcurrentError(`this API key has ${cap} replay${cap === 1 ? '' : 's'} running, the most one key may (API_REPLAYS_PER_KEY); retry when one has ended`, { limit: 'replays', allowed: cap!, retry_after_seconds: 1 });
      }
      const abort = new AbortController();
      const opened: VenueRows[] = [];
      let handedOver = false;
      const closeAll = async () => {
        abort.abort();
        await Promise.all(opened.map((r) => r.it.return?.(undefined).catch(() => undefined)));
        release();
      };
      reply.raw.once('close', () => void closeAll());
      try {
        // The series: outcome tokens (exchange A assets) resolved to their markets, those with
        // none are unknown; a market of a venue without tokens (a B ticker) is its own series.
        const tokens = (m: { venue: Venue }) => venueModule(m.venue).tokens;
        const aAssets = qs.markets.filter(tokens).map((m) => m.id);
        const aMarkets = await guard('ClickHouse', () => marketsOfAssets(aAssets, from, to));
        const series: Series[] = [];
        const unknown: string[] = [];
        for (const m of qs.markets) {
          if (!tokens(m)) series.push({ name: m.name, venue: m.venue, id: m.id, market: m.id });
          else if (aMarkets.has(m.id)) series.push({ name: m.name, venue: m.venue, id: m.id, market: aMarkets.get(m.id)! });
          else unknown.push(m.name);
        }
        if (series.length === 0) throw notFound(`no stored data for ${unknown.join(', ')} (an exchange A asset id must have stored records by ${new Date(to).toISOString()})`);

        const streamBooks = new StreamBooks(series);
        // Each series' book at the window's start, from history (checkpoints and records before `from`).
        const opening = new Array<ReturnType<StreamBooks['open']>>(series.length);
        for (let i = 0; i < series.length; i += OPEN_PARALLEL) {
          const part = series.slice(i, i + OPEN_PARALLEL);
          const got = await guard('ClickHouse', () => Promise.all(part.map((s) => bookAt(books, { venue: s.venue, market: s.market, asset: s.id }, from - 1, Number.MAX_SAFE_INTEGER))));
          got.forEach((b, j) => {
            const toLevels = (ls: Array<{ price: string; size: string }>): Level[] => ls.map((l) => [l.price, l.size]);
            opening[i + j] = streamBooks.open(part[j]!, from, b.known, toLevels(b.sides[0]), toLevels(b.sides[1]));
          });
        }
        const gaps = await guard('ClickHouse', () => gapMarkers(series, from, to));

        const read = { signal: abort.signal };
        const rows: Partial<Record<Venue, VenueRows>> = {};
        for (const venue of ALL_VENUES) {
          const mine = series.filter((s) => s.venue === venue);
          if (mine.length === 0) continue;
          const it = replay.rows(venue, [...new Set(mine.map((s) => s.market))], from, to, { ...read, ...(venueModule(venue).tokens ? { assets: mine.map((s) => s.id) } : {}) });
          const r = await openVenue(it);
          opened.push(r);
          rows[venue] = r;
        }

        const snapshots: SnapshotPlan | null =
          qs.snapshot_interval === undefined ? null : { ...snapshotInstants(from, to, qs.snapshot_interval), intervalMs: qs.snapshot_interval, depth: qs.depth ?? STREAM_DEFAULT_DEPTH };
        const start = {
          type: 'start',
          from,
          to,
          markets: series.map((s) => s.name),
          unknown_markets: unknown,
          snapshot_interval_ms: snapshots?.intervalMs ?? null,
          depth: snapshots?.depth ?? null,
        };

        async function* body(): AsyncGenerator<Buffer> {
          let buf = `${JSON.stringify(start)}\n`;
          let count = 0;
          try {
            for (const m of opening) buf += `${JSON.stringify(m)}\n`;
            for await (const m of mergedMessages({ books: streamBooks, rows, gaps, snapshots })) {
              buf += `${JSON.stringify(m)}\n`;
              count++;
              if (buf.length >= CHUNK_BYTES) {
                yield Buffer.from(buf, 'utf8');
                buf = '';
              }
            }
            buf += `${JSON.stringify({ type: 'end', ts: to, messages: count + opening.length })}\n`;
          } catch (e) {
            if (abort.signal.aborted) return;
            req.log.error({ err: e }, 'replay stream failed after the status line');
            // The answer is cut (not billed): its last line says why, and there is no `end` line.
            markCut(reply.raw, 'internal_error');
            const error = { code: 'internal_error', message: 'the replay failed: the lines before this one are complete; ask again from the last ts you got' };
            buf += `${JSON.stringify({ type: 'error', error })}\n`;
          } finally {
            await closeAll();
          }
          if (buf.length > 0) yield Buffer.from(buf, 'utf8');
        }
        const stream = Readable.from(body(), { objectMode: false, highWaterMark: CHUNK_BYTES });
        stream.once('close', () => void closeAll());
        reply.raw.once('close', () => {
          if (!reply.raw.writableFinished) stream.destroy();
        });
        handedOver = true;
        return reply.header('content-type', NDJSON).header('cache-control', 'no-store').send(stream as never);
      } catch (e) {
        if (!handedOver) await closeAll();
        if (e instanceof ApiError) throw e;
        throw streamSessionError(e);
      }
    },
  );
};
