import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { TooManyBucketsError, releaseSummaryParts, utcDayWindow, type ColumnSeries, type ExactBucket } from '@booktape/book';
import { Readable } from 'node:stream';
import { summaryBodyParts } from './summary-body.ts';
import { FairTurns, LARGE_ANSWER_BUCKETS, etagInSlices } from './large-answers.ts';
import { SettledAnswers } from './answer-cache.ts';
import { settledAnswerTag } from './answer-tag.ts';
import { planSummary, type RollupState, type SummaryPlan } from '@booktape/summaries';
import type { SummaryKey } from '@booktape/storage';
import type { FastifyRequest } from 'fastify';
import { KEY_SECURITY } from '../http/auth.ts';
import { cacheHeaders, isFinalised, notModified } from '../http/caching.ts';
import { errors, guard, invalidParameter } from '../http/errors.ts';
import { CONTENT_TYPES, FORMAT_MEDIA_TYPES, formatField, type Format } from '../http/formats.ts';
import { TIME_SCHEMA, earliestMs, optionalField, parseInteger, parseTimestamp, q, timeDescription } from '../http/params.ts';
import { slugRoute } from '../market-data/market-by-slug.ts';
import { dataFloor, VENUES, marketOf, venueName, venuePaths, type VenueApi } from '../market-data/venues.ts';
import type { Services } from '../services.ts';
import { summaryCommon } from './orderbook-summary.schemas.ts';

/**
 * Summary answers are written as JSON text by this module to the schema's shape (the
 * schema still documents them in OpenAPI); validating up to 100,000 buckets again on the
 * way out would cost more than computing them. Error bodies are objects: stringified.
 */
/** Answers from this size on are sent part by part, not joined first. */
const STREAM_BODY_BYTES = 1024 * 1024;

const plainJson = () => (data: unknown) => (typeof data === 'string' ? data : JSON.stringify(data));


const windowQuery = {
  date: z.string().optional().meta({ description: 'UTC date YYYY-MM-DD; required unless both timestamps are given.' }),
  // Read by the API's one time parser (docs/api.md, "Time").
  start_timestamp: optionalField(parseTimestamp('start'), `${timeDescription('Window start', 'start')} Together with end_timestamp.`, TIME_SCHEMA),
  end_timestamp: optionalField(parseTimestamp('end'), `${timeDescription('Window end', 'end')} Together with start_timestamp.`, TIME_SCHEMA),
  resolution: optionalField((r) => parseInteger(r, 1, 3600), 'Bucket size in seconds, 1 to 3600. Default 60.', { type: 'integer', minimum: 1, maximum: 3600 }),
  format: formatField(),
};

interface WindowQuery {
  date?: string | undefined;
  start_timestamp?: number | undefined;
  end_timestamp?: number | undefined;
  resolution?: number | undefined;
  format?: Format | undefined;
}

/**
 * Order-book summaries (interface 4.3, docs/rules/summaries.md): the query becomes a plan, the summaries
 * library (SummaryReader) answers it from the rollup worker's stored buckets and the part
 * not rolled up yet, and the buckets are written as the answer.
 */
export const orderbookSummaryRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { config, requireKey, summaries } = services;
  // One large answer built at a time in this process, keys served in turn.
  const largeTurns = new FairTurns(1);
  // Settled answers as sent: a finished day asked again costs a Redis read, not a rebuild.
  const settled = new SettledAnswers(config.summaryAnswerCacheBytes);
  // What the route's `prefetch` worked out with the quota reservation: the request's plan and
  // asset, and the asset's rollup state read alongside (none for a plan of no buckets). The
  // handler takes them from here instead of working them out again.
  const ahead = new WeakMap<FastifyRequest, { p: SummaryPlan; key: SummaryKey; state: Promise<RollupState> | undefined }>();

  function plan(v: VenueApi, query: WindowQuery): SummaryPlan {
    const { date, start_timestamp: start, end_timestamp: end } = query;
    const resolution = query.resolution ?? 60;
    if (date !== undefined && (start !== undefined || end !== undefined)) throw invalidParameter('date', 'give either date or start_timestamp and end_timestamp, not both');
    if ((start === undefined) !== (end === undefined)) throw invalidParameter(start === undefined ? 'start_timestamp' : 'end_timestamp', 'start_timestamp and end_timestamp must be given together');
    let window: { startMs: number; endMs: number };
    if (date !== undefined) {
      const parsed = q.date().safeParse(date);
      if (!parsed.success) throw invalidParameter('date', parsed.error.issues[0]?.message ?? 'must be a date YYYY-MM-DD');
      window = utcDayWindow(parsed.data);
    } else if (start !== undefined && end !== undefined) {
      if (start > end) throw invalidParameter('start_timestamp', 'start_timestamp must not be after end_timestamp');
      window = { startMs: start, endMs: end };
    } else {
      throw invalidParameter('date', 'date is required unless start_timestamp and end_timestamp are given');
    }
    const first = dataFloor(v, config);
    if (first !== undefined && window.startMs < earliestMs(first)) {
      throw invalidParameter(date !== undefined ? 'date' : 'start_timestamp', `${venueName(v)} summaries start at ${first}`);
    }
    try {
      return planSummary(window, resolution);
    } catch (e) {
      if (e instanceof TooManyBucketsError) throw invalidParameter('resolution', `${e.requested} buckets requested; one answer holds at most ${e.limit}: use a larger resolution or a shorter window`);
      throw invalidParameter('resolution', (e as Error).message);
    }
  }

  // The body as JSON bytes: the small head stringified, the buckets written from their exact decimals.
  const answer = (head: Record<string, unknown>, exact: readonly ExactBucket[] | ColumnSeries, p: SummaryPlan, date: string | undefined): Promise<Buffer[]> => {
    const fields = {
      ...head,
      date: date ?? null,
      ...(date === undefined ? { start_timestamp: p.window.startMs, end_timestamp: p.window.endMs } : {}),
      resolution_seconds: p.resolution,
      data_points: 'columns' in exact ? exact.n : exact.length,
    };
    return summaryBodyParts(exact, 'json', `${JSON.stringify(fields).slice(0, -1)},"data":`, '}');
  };

  for (const v of VENUES) {
    const asset = v.asset;
    // The series: one outcome token where the venue's markets have them, else the market.
    const bySlug = slugRoute(v, services.lookup, { marketRequired: true, outcome: 'required' });
    const ids = { [v.marketParam]: v.market(), ...(asset ? { [asset.param]: q.text(asset.description, 128) } : {}), ...bySlug.fields };
    const head = { [v.marketField]: z.string(), ...(asset ? { [asset.param]: z.string() } : {}) };
    const keyOf = (query: Record<string, string> & WindowQuery) => {
      const market = marketOf(v, query);
      return { venue: v.venue, market, asset: asset ? query[asset.param]! : market };
    };
    // The reservation's Redis round trip brings the rollup state too (billable.hooks.ts).
    const prefetch = (req: FastifyRequest): void => {
      const query = req.query as Record<string, string> & WindowQuery;
      let p: SummaryPlan;
      try {
        p = plan(v, query);
      } catch {
        return; // the handler answers the parameter error
      }
      const key = keyOf(query);
      const state = p.plan.count === 0 ? undefined : summaries.rollupState(key);
      // Awaited by the handler, or never (a 429): no unhandled rejection either way.
      state?.catch(() => undefined);
      ahead.set(req, { p, key, state });
    };
    for (const { url, alias } of venuePaths(v, 'orderbook-summary')) {
      app.get(
        url,
        {
          schema: {
            summary: alias ? `${v.summaryTitle} (legacy alias)` : v.summaryTitle,
            tags: [v.venue],
            security: KEY_SECURITY,
            deprecated: alias,
            produces: FORMAT_MEDIA_TYPES,
            answerHeaders: bySlug.answerHeaders,
            querystring: z.object({ ...ids, ...windowQuery }),
            response: {
              200: z.object({ ...head, ...summaryCommon }).describe('The buckets of the window at the resolution, forward-filled (docs/rules/summaries.md).'),
              304: notModified,
              ...errors,
            },
          },
          onRequest: requireKey,
          ...bySlug.options,
          config: { prefetch },
          serializerCompiler: plainJson,
        },
        async (req, reply) => {
          const query = req.query as Record<string, string> & WindowQuery;
          // Planned with the reservation where there was one (billable.hooks.ts), else here.
          const early = ahead.get(req);
          const p = early?.p ?? plan(v, query);
          const key = early?.key ?? keyOf(query);
          const { market, asset: assetId } = key;
          // Read with the reservation; not used after waiting for a large answer's turn (old by then).
          let state = early?.state;
          const format = query.format ?? 'json';
          const finalised = isFinalised(p.window.endMs, Date.now(), config.caching.finalisedAfterMs);
          // The request's answer id: the head of a json answer says date or window, so both are in it.
          const id = JSON.stringify([v.venue, market, assetId, p.window.startMs, p.window.endMs, p.resolution, format, query.date ?? null]);
          const kept = async (): Promise<{ body: readonly Buffer[]; tag: string | null } | undefined> => {
            // No entry: nothing to check a stamp against (the build reads the asset's state itself).
            if (!settled.has(id)) return undefined;
            const stamp = await guard('ClickHouse', () => summaries.stamp(key, p, undefined, state));
            const hit = stamp === null ? undefined : settled.get(id, stamp);
            if (hit === undefined) return undefined;
            return { body: hit.parts, tag: finalised ? settledAnswerTag(id, hit.stamp) : null };
          };
          let answered = await kept();
          if (answered === undefined) {
            // A large answer is built in its turn (large-answers.ts); a small one at once.
            const large = p.plan.count >= LARGE_ANSWER_BUCKETS;
            // A turn free at once: the state read with the reservation is as fresh as a small answer's.
            let release = large ? largeTurns.takeNow() : () => undefined;
            const waited = release === undefined;
            if (waited) {
              release = await largeTurns.take(req.apiKey?.key_id ?? '');
              // Read again after the wait: the state read with the reservation is old by then.
              state = undefined;
            }
            try {
              if (req.raw.destroyed || reply.raw.destroyed) {
                // The client went away while the answer waited for its turn: nothing to build.
                return reply;
              }
              // The answer may have been built and kept while this request waited for its turn.
              answered = waited ? await kept() : undefined;
              if (answered === undefined) {
                const got = await guard('ClickHouse', () => summaries.summaryAnswer(key, p, undefined, state));
                const { stamp } = got;
                // Kept in the stored columns: written straight from them.
                const exact = got.kind === 'series' ? got.series : got.buckets;
                const body =
                  format === 'json'
                    ? await answer({ [v.marketField]: market, ...(asset ? { [asset.param]: assetId } : {}) }, exact, p, query.date)
                    : await summaryBodyParts(exact, format);
                // A settled answer's tag names its inputs; any other's is the digest of its bytes.
                const tag = !finalised ? null : stamp !== null ? settledAnswerTag(id, stamp) : await etagInSlices('summary', format, body);
                if (stamp !== null && config.summaryAnswerCacheBytes > 0) settled.set(id, stamp, body);
                // Not kept: its Buffers are written again by later answers once this one is sent or abandoned.
                else reply.raw.once('close', () => releaseSummaryParts(body));
                answered = { body, tag };
              }
            } finally {
              release!();
            }
          }
          const { body, tag } = answered;
          if (cacheHeaders(req, reply, tag, config.caching)) return reply.send(undefined as never);
          reply.type(CONTENT_TYPES[format]);
          let length = 0;
          for (const b of body) length += b.length;
          // A small answer joined; a large one sent part by part (joining it is a copy of the whole).
          if (length < STREAM_BODY_BYTES) return (body.length === 1 ? body[0]! : Buffer.concat(body, length)) as never;
          reply.header('content-length', length);
          return reply.send(Readable.from(body, { objectMode: false }) as never);
        },
      );
    }
  }
};
