import { randomUUID } from 'node:crypto';
import { Stream } from 'node:stream';
import type { FastifyReply, FastifyRequest, RouteOptions, onRequestHookHandler, onSendHookHandler, preHandlerHookHandler } from 'fastify';
import { isServerRequestId } from '../http/request-id.ts';
import { CUT_STATUS, cutReason } from '../http/slow-reader.ts';
import type { Plan } from '../billing/plans.ts';
import type { SubscriptionService } from '../billing/subscription.service.ts';
import type { RequestLogWriter } from './request-log.ts';
import type { ConcurrencyLimiter } from './concurrency.ts';
import { periodOf, quotaExceededBody, rateLimitFields, tooManyConcurrentBody, type LimitState } from './limits.ts';
import type { QuotaService, ReserveResult } from './quota.service.ts';
import type { KeyService } from '../keys/keys.service.ts';
import { tooManyRequestsSchema } from './schemas.ts';

/**
 * Billing of the historical-data routes: every route whose onRequest hooks include
 * `requireKey` (the Bearer key check) is billable. An `onRoute` hook finds them as they are
 * registered and adds:
 *
 * - onRequest, after the key check: tracking. On the response's `close` (which also fires
 *   when the client goes away mid-stream, when Fastify's onResponse does not) the
 *   request-log row is written, then the reservation (if any) settled. The call counts only
 *   when the client got a 2xx answer whole: a 2xx whose body was cut is logged as 499 when
 *   the client went away, as 500 when the answer's stream failed, and neither is billed; a
 *   client gone before the status line is logged as 499, and an answer cut for a reader
 *   below the slow-reader floor (http/slow-reader.ts) as 408, not billed. Requests refused for their
 *   parameters (400) are logged too, but hold no reservation.
 * - onSend: notes a streamed body that fails after the status line (the 500 above).
 * - preHandler, after parameter validation: a slot among the key's requests in progress
 *   (429 `too_many_concurrent_requests` at the plan's cap, held until the response closes),
 *   then the quota reservation (429 with Retry-After and the limit in the body when
 *   refused). So over the quota a malformed request still gets its 400, authentication
 *   (401/403) comes before both, and a request refused for concurrency uses no quota.
 * - the 429 answer in the route's OpenAPI responses.
 *
 * And on every route behind `requireKey`, billed or not, an onSend hook: the answer is
 * `Cache-Control: private` (it was paid for with a key: no shared cache may keep it), and
 * it carries the RateLimit fields of the key's user (from the reservation, or read without
 * counting anything where there was none: the coverage map, a 400, a 304, a 429 for
 * requests in progress).
 *
 * Routes of the API that need no key (health, lookup, keys, usage, stats) are not billed,
 * nor is a route behind `requireKey` whose config says `billable: false` (the coverage map).
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /** false: the route needs a key (requireKey) but is not billed. */
    billable?: boolean;
    /** Quota units a request of the route counts as, from its validated query (default 1): a bulk export's days. */
    quotaUnits?: (query: unknown) => number;
    /**
     * Reads the handler will need, started (not awaited) together with the quota reservation
     * so that both take one Redis round trip; called with the validated query, only when the
     * request is going to be reserved. The route keeps what it starts and must not let a
     * read it never awaits reject unhandled (a request refused at 429 never reaches the handler).
     */
    prefetch?: (req: FastifyRequest) => void;
  }
}

export interface BillableDeps {
  requireKey: (req: FastifyRequest) => Promise<void>;
  /** Whose key a request carries, when known already: the plan is then read along with the key. */
  keys?: Pick<KeyService, 'knownUser'>;
  quota: QuotaService;
  subscriptions: Pick<SubscriptionService, 'planOf'>;
  requestLog: RequestLogWriter;
  /** Requests in progress per key in this process (the plan's `concurrent` cap). */
  concurrency: ConcurrencyLimiter;
  /** Route prefix stripped from logged endpoints (`/api/v1`). */
  prefix: string;
}

const MAX_PARAMS_CHARS = 2000;

/** The endpoint as logged: the route pattern without the version prefix. */
export function endpointOf(url: string, prefix: string): string {
  return url.startsWith(prefix) ? url.slice(prefix.length) || '/' : url;
}

export function venueOf(endpoint: string): string {
  if (endpoint.startsWith('/exchange-a/') || endpoint.startsWith('/market/')) return 'exchange-a';
  if (endpoint.startsWith('/exchange-b/')) return 'exchange-b';
  return '';
}

/** Query parameters as logged: cursors shortened (opaque and long), the whole capped. */
export function paramsJson(query: unknown): string {
  if (!query || typeof query !== 'object') return '{}';
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(query as Record<string, unknown>)) {
    if (v === undefined) continue;
    out[k] = k === 'cursor' && typeof v === 'string' && v.length > 24 ? `${v.slice(0, 24)}…` : v;
  }
  const s = JSON.stringify(out);
  return s.length > MAX_PARAMS_CHARS ? JSON.stringify({ truncated: s.slice(0, MAX_PARAMS_CHARS) }) : s;
}

/** The market a successful request was about (normalised by the route's schema), or ''. */
export function marketOf(query: unknown): string {
  if (!query || typeof query !== 'object') return '';
  const q = query as Record<string, unknown>;
  const m = q.condition_id ?? q.ticker;
  return typeof m === 'string' ? m : '';
}

/** Counts the body bytes of a response as they are written (streamed or not). */
function countBodyBytes(reply: FastifyReply): { bytes: number } {
  const counter = { bytes: 0 };
  const raw = reply.raw;
  const write = raw.write;
  const end = raw.end;
  let ending = false;
  const size = (chunk: unknown, encoding?: unknown) =>
    typeof chunk === 'string' ? Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8') : chunk instanceof Uint8Array ? chunk.byteLength : 0;
  // Own properties on this response only. `ending`: some responses implement end(data) as
  // write(data) + end() (light-my-request does), which must not count the data twice.
  raw.write = function (this: typeof raw, chunk: unknown, ...rest: unknown[]) {
    if (!ending) counter.bytes += size(chunk, rest[0]);
    return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof raw.write;
  raw.end = function (this: typeof raw, chunk?: unknown, ...rest: unknown[]) {
    if (chunk !== undefined && typeof chunk !== 'function') counter.bytes += size(chunk, rest[0]);
    ending = true;
    return (end as (...a: unknown[]) => typeof raw).call(this, chunk, ...rest);
  } as typeof raw.end;
  return counter;
}

interface TrackState {
  requestId: string;
  /** The plan in force, once the reservation looked it up ('' before). */
  plan: Plan | '';
  /** Quota units of the request (route config quotaUnits, default 1). */
  units: number;
  result: ReserveResult | null;
  /** The response closed (the row is written): a reservation arriving later is given back at once. */
  closed: boolean;
  /** Where the user stood after the reservation (the RateLimit fields), until the answer is sent. */
  standing: LimitState | null;
  /** The body stream failed (after the status line, the answer is then cut by the server). */
  bodyFailed: boolean;
  /** Gives the key's concurrency slot back (on close). */
  release: (() => void) | null;
}

/** The status a request is logged with: what the client got, a cut 2xx answer not being a 2xx. */
export function loggedStatus(r: { headersSent: boolean; statusCode: number; finished: boolean; bodyFailed: boolean; cut?: boolean }): number {
  if (!r.headersSent) return 499;
  // Cut by the server for a reader below the floor: the client got an error marker, not the answer.
  if (r.cut) return CUT_STATUS;
  const success = r.statusCode >= 200 && r.statusCode < 300;
  if (success && !r.finished) return r.bodyFailed ? 500 : 499;
  return r.statusCode;
}

export function billableRoutes(deps: BillableDeps) {
  const urls = new Set<string>();
  const states = new WeakMap<FastifyRequest, TrackState>();
  /** The plan of the key's user, read while the key is being checked (planAhead). */
  const plansAhead = new WeakMap<FastifyRequest, { userId: string; plan: Promise<Plan> }>();

  /**
   * onRequest, before the key check: where this process has seen the key before (and so
   * knows its user), the user's plan is asked for now, in the same Redis round trip as the
   * key's record, instead of after it. The reservation uses it only for that same user; a
   * key refused meanwhile leaves it unread.
   */
  const planAhead: onRequestHookHandler = async function (req) {
    const userId = deps.keys?.knownUser(req.headers.authorization);
    if (userId === undefined) return;
    const plan = deps.subscriptions.planOf(userId);
    // Awaited by the reservation, or never (a refused key): no unhandled rejection either way.
    plan.catch(() => undefined);
    plansAhead.set(req, { userId, plan });
  };

  const planOf = (req: FastifyRequest, userId: string): Promise<Plan> => {
    const ahead = plansAhead.get(req);
    return ahead !== undefined && ahead.userId === userId ? ahead.plan : deps.subscriptions.planOf(userId);
  };

  /** onRequest, after the key check: the request is logged on `close`, whatever becomes of it. */
  const track: onRequestHookHandler = async function (req, reply) {
    const key = req.apiKey;
    if (!key) return; // requireKey refused the request already
    const ts = Date.now();
    // The request log's id is the answer's X-Request-Id when the server made it; a client's
    // own id may repeat, and the quota rebuild counts rows by id (and the open reservation's
    // o:<id> field is keyed by it), so it gets a fresh one.
    const requestId = isServerRequestId(req) ? req.id : randomUUID();
    const state: TrackState = { requestId, plan: '', units: 1, result: null, closed: false, standing: null, bodyFailed: false, release: null };
    states.set(req, state);
    const body = countBodyBytes(reply);
    // 'finish': the whole body was handed to the socket; not emitted when the client left
    // mid-body or the body's stream failed and Fastify destroyed the response.
    let finished = false;
    reply.raw.once('finish', () => (finished = true));
    reply.raw.once('close', () => {
      state.closed = true;
      state.release?.();
      const status = loggedStatus({ headersSent: reply.raw.headersSent, statusCode: reply.raw.statusCode, finished: finished || reply.raw.writableFinished, bodyFailed: state.bodyFailed, cut: cutReason(reply.raw) !== undefined });
      const reserved = state.result?.ok ? state.result.reservation : null;
      const ok = reserved !== null && status >= 200 && status < 300;
      const endpoint = endpointOf(req.routeOptions.url ?? req.url.split('?')[0]!, deps.prefix);
      // The row first, then the settlement, in this tick: a counter rebuild sees the
      // request either as open or as a row, never as neither or both.
      deps.requestLog.add({
        ts,
        request_id: requestId,
        user_id: key.user_id,
        key_id: key.key_id,
        plan: state.plan,
        endpoint,
        venue: venueOf(endpoint),
        market: ok ? marketOf(req.query) : '',
        params: paramsJson(req.query),
        status,
        billable: 1,
        latency_ms: Math.round(reply.elapsedTime * 100) / 100,
        bytes: body.bytes,
        units: state.units,
      });
      if (reserved) deps.quota.settle(reserved, ok);
    });
  };

  /**
   * preHandler, after the parameters passed validation (a malformed request is a 400 and
   * never holds a reservation that could crowd out a good one): reserve, or answer 429.
   */
  const reserve: preHandlerHookHandler = async function (req, reply) {
    const state = states.get(req);
    const key = req.apiKey;
    if (!state || !key) return;
    const plan = await planOf(req, key.user_id);
    state.plan = plan;
    if (state.closed) return; // the client went away meanwhile: nothing to hold a slot for
    const cap = deps.quota.limits[plan].concurrent ?? null;
    state.release = deps.concurrency.tryAcquire(key.key_id, cap);
    if (state.release === null) {
      // No reservation, so the RateLimit fields come from keyedAnswer's read of the quota,
      // counting nothing: a cap on requests in progress is no quota window the fields could
      // describe, and Retry-After says when to come back.
      reply.header('retry-after', '1');
      return reply.code(429).send(tooManyConcurrentBody(plan, cap!));
    }
    // Same id as the log row: a counter rebuild matches open reservations to stored rows by it.
    const units = req.routeOptions.config.quotaUnits?.(req.query) ?? 1;
    state.units = Number.isInteger(units) && units >= 1 ? units : 1;
    // The handler's own reads go out with the reservation (one round trip for both).
    req.routeOptions.config.prefetch?.(req);
    state.result = await deps.quota.reserve(key.user_id, plan, state.requestId, state.units);
    if (state.closed) {
      // The client went away while the reservation was being made: not served, not billed.
      if (state.result.ok) deps.quota.settle(state.result.reservation, false);
      return;
    }
    const now = Date.now();
    const r = state.result;
    const limit = deps.quota.limits[plan];
    const standing: LimitState = r.ok
      ? { limit, period: r.reservation.period, monthlyUsed: r.used, secondUsed: r.secondUsed, nowMs: now }
      : { limit, period: periodOf(now), monthlyUsed: r.exceeded.limit === 'monthly' ? r.exceeded.used : 0, secondUsed: r.exceeded.limit === 'per_second' ? r.exceeded.used : 0, nowMs: now };
    state.standing = r.ok ? standing : null;
    setRateLimit(reply, rateLimitFields(standing, r.ok ? undefined : r.exceeded.limit));
    if (!r.ok) {
      const e = r.exceeded;
      reply.header('retry-after', String(e.retryAfterS));
      return reply.code(429).send(quotaExceededBody(e));
    }
  };

  /** onSend of every keyed route: private caching, and the RateLimit fields where the reservation gave none. */
  const keyedAnswer: onSendHookHandler = async function (req, reply, payload) {
    reply.header('cache-control', privateCacheControl(reply.getHeader('cache-control')));
    const key = req.apiKey;
    if (!key) return payload;
    if (reply.statusCode >= 500) {
      // A 5xx may be Redis itself failing: no second wait on it for advisory fields, and none
      // from a reservation that is given back (the document declares none on 5xx).
      for (const h of RATE_LIMIT_FIELDS) reply.removeHeader(h);
      return payload;
    }
    const standing = states.get(req)?.standing;
    if (standing && (reply.statusCode < 200 || reply.statusCode >= 300)) {
      // Reserved, but not a success (a 304, a 4xx from the handler): the reservation is given
      // back when the answer closes, so the fields say what remains after that.
      const units = states.get(req)!.units;
      setRateLimit(reply, rateLimitFields({ ...standing, monthlyUsed: standing.monthlyUsed - units }));
      return payload;
    }
    if (reply.hasHeader('ratelimit-limit')) return payload;
    // Reserved: the reservation gave the fields, or none because the plan has no limits.
    if (standing) return payload;
    try {
      // The plan the reservation already read, where there was one (one Redis call fewer).
      const plan = states.get(req)?.plan || (await planOf(req, key.user_id));
      const limit = deps.quota.limits[plan];
      // A plan without limits has no fields to give: nothing to read.
      if (limit.monthly === null && limit.perSecond === null) return payload;
      const now = Date.now();
      const p = await deps.quota.peek(key.user_id, now);
      setRateLimit(reply, rateLimitFields({ limit, period: p.period, monthlyUsed: p.monthlyUsed, secondUsed: p.secondUsed, nowMs: now }));
    } catch (err) {
      // Advisory fields: an answer is not failed for want of them (Redis down answers 503 elsewhere).
      req.log.debug({ err }, 'RateLimit fields left out');
    }
    return payload;
  };

  /** onSend: a streamed body that fails is an answer cut by the server (logged 500, not billed). */
  const watchBody: onSendHookHandler = async function (req, _reply, payload) {
    const state = states.get(req);
    if (state && payload instanceof Stream) payload.once('error', () => (state.bodyFailed = true));
    return payload;
  };

  const list = <T>(h: T | T[] | undefined): T[] => (h === undefined ? [] : Array.isArray(h) ? h : [h]);

  return {
    /** Endpoints (without the prefix) that are billed, as registered so far. */
    urls,
    onRoute(route: RouteOptions): void {
      const hooks = list(route.onRequest);
      // HEAD twins of GET routes may arrive here with the hooks already added.
      if (!hooks.includes(deps.requireKey as never)) return;
      if (!list(route.onSend).includes(keyedAnswer)) route.onSend = [keyedAnswer, ...list(route.onSend)];
      if (route.config?.billable === false || hooks.includes(track)) return;
      urls.add(endpointOf(route.url, deps.prefix));
      // The plan read starts just before the key check (the hooks run in this order).
      const at = hooks.indexOf(deps.requireKey as never);
      route.onRequest = [...hooks.slice(0, at), planAhead, ...hooks.slice(at), track];
      route.preHandler = [...list(route.preHandler), reserve];
      route.onSend = [...list(route.onSend), watchBody];
      if (route.schema) {
        route.schema = { ...route.schema, response: { ...(route.schema.response as object | undefined), 429: tooManyRequestsSchema } };
      }
    },
  };
}

const RATE_LIMIT_FIELDS = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'ratelimit-policy'];

function setRateLimit(reply: FastifyReply, fields: Record<string, string> | null): void {
  if (fields) for (const [name, value] of Object.entries(fields)) reply.header(name, value);
}

/**
 * The Cache-Control of an answer to a keyed request: `private` first, `public` dropped;
 * `private, no-cache` when the route set none. ETags and 304s work the same with a private
 * cache (the client's own).
 */
export function privateCacheControl(current: unknown): string {
  const directives = (typeof current === 'string' ? current : Array.isArray(current) ? current.join(',') : '')
    .split(',')
    .map((d) => d.trim())
    .filter((d) => d !== '' && !/^(?:public|private)$/i.test(d));
  return ['private', ...(directives.length > 0 ? directives : ['no-cache'])].join(', ');
}
