import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { WebSocketServer, type WebSocket } from 'ws';
import { utcDate } from '@booktape/domain';
import type { Plan } from '../billing/plans.ts';
import { KEY_SECURITY } from '../http/auth.ts';
import { ApiError, errorBody, errors, errorSchema, invalidParameter, isUnavailable } from '../http/errors.ts';
import { earliestMs, optionalField, parseTimestamp, q, type Parsed } from '../http/params.ts';
import { API_PREFIX } from '../http/prefix.ts';
import { dataFloor, VENUES, venueAliasRewrite, venueName } from '../market-data/venues.ts';
import type { Services } from '../services.ts';
import { paramsJson } from '../usage/billable.hooks.ts';
import { quotaExceededBody } from '../usage/limits.ts';
import { tooManyRequestsSchema } from '../usage/schemas.ts';
import type { Reservation } from '../usage/quota.service.ts';
import { exchangeAReplay } from './exchange-a.session.ts';
import { exchangeBReplay } from './exchange-b.session.ts';
import type { ReplayOutcome, ReplayWindow, VenueReplay } from './replay-socket.ts';

/**
 * Replay of stored history through the venues' own websocket protocols (issue 25), on the
 * API's port: a client of the live feed changes only its URL.
 *
 *   ws://HOST:PORT/api/v1/exchange-a/replay/ws/market?from=…&to=…[&speed=…]
 *   ws://HOST:PORT/api/v1/exchange-b/replay/trade-api/ws/v2?from=…&to=…[&speed=…]
 *
 * Both venues share everything here (admission, limits, billing, the request log) and the
 * socket's pacing and back-pressure (replay-socket.ts); each speaks its own protocol
 * (exchange-a.session.ts, exchange-b.session.ts).
 *
 * The upgrade is admitted before it is accepted, with the answers of the other data
 * endpoints as plain HTTP (the socket is then closed): the key (`Authorization: Bearer` or
 * `api_key` in the query, for clients that cannot set headers; 401/403), the window (400),
 * the key's replays running in this process (429 `too_many_concurrent_requests`,
 * API_REPLAYS_PER_KEY), the plan's quota (429 `rate_limited`, one unit per UTC day of the
 * window, like a bulk export). A replay is logged in the request log like any data
 * request, and paid for when the window was sent to its end (close 1000); a client that
 * leaves before pays nothing, as with a streamed page it stops reading.
 *
 * A plain GET of the path (no upgrade) answers 426 with the same error shape: the route is
 * in the OpenAPI document for its parameters.
 */

/** The longest window one replay may span. */
export const REPLAY_MAX_DAYS = 31;
const SPEED_MAX = 1_000_000;
const DAY_MS = 86_400_000;

interface ReplayQuery {
  fromMs: number;
  toMs: number;
  speed: number | null;
}

const parseSpeed = (raw: string): Parsed<number> => {
  const n = Number(raw);
  return raw.trim() !== '' && Number.isFinite(n) && n > 0 && n <= SPEED_MAX ? { ok: true, value: n } : { ok: false, message: `must be a number above 0 and at most ${SPEED_MAX} (a factor of real time)` };
};

/** The window's UTC days: the quota units a replay counts as. */
export const daysOfWindow = (fromMs: number, toMs: number): number => (Date.parse(`${utcDate(toMs)}T00:00:00Z`) - Date.parse(`${utcDate(fromMs)}T00:00:00Z`)) / DAY_MS + 1;

function field(params: URLSearchParams, name: string, parse: (raw: string) => Parsed<number>, required: boolean): number | undefined {
  const all = params.getAll(name);
  if (all.length === 0) {
    if (required) throw new ApiError(400, 'missing_parameter', `${name} is required`, name);
    return undefined;
  }
  if (all.length > 1) throw invalidParameter(name, `${name} given more than once`);
  const r = parse(all[0]!);
  if (!r.ok) throw invalidParameter(name, `${name} ${r.message}`);
  return r.value;
}

/** The venues' replays (one module each); a path (after alias rewriting) finds its venue's. */
const REPLAYS: ReadonlyArray<VenueReplay<Services>> = [exchangeAReplay, exchangeBReplay];
const BY_PATH = new Map(REPLAYS.map((r) => [`${API_PREFIX}${r.path}`, r]));

export const replayRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { config, keys, subscriptions, quota, requestLog, log } = services;
  // One count per key for both kinds of replay.
  const limiter = services.replaySlots;
  const cap = config.replaysPerKey === undefined ? 2 : config.replaysPerKey;
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 1 << 20 });
  const live = new Set<WebSocket>();

  function parseWindow(params: URLSearchParams, venue: VenueReplay<Services>['venue']): ReplayQuery {
    const fromMs = field(params, 'from', parseTimestamp('start'), true)!;
    const toMs = field(params, 'to', parseTimestamp('end'), true)!;
    const speed = field(params, 'speed', parseSpeed, false) ?? null;
    if (fromMs > toMs) throw invalidParameter('from', 'from must not be after to');
    if (daysOfWindow(fromMs, toMs) > REPLAY_MAX_DAYS) throw invalidParameter('to', `a replay spans at most ${REPLAY_MAX_DAYS} UTC days`);
    const v = VENUES.find((x) => x.venue === venue)!;
    const floor = dataFloor(v, config);
    if (floor !== undefined && fromMs < earliestMs(floor)) throw invalidParameter('from', `${venueName(v)} data is served from ${floor} on`);
    return { fromMs, toMs, speed };
  }

  /** An answer before the upgrade: plain HTTP on the raw socket, then closed. */
  function refuse(socket: Duplex, status: number, body: unknown, headers: Record<string, string> = {}): void {
    if (socket.destroyed) return;
    const text = JSON.stringify(body);
    const head = [`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`, 'Content-Type: application/json; charset=utf-8', `Content-Length: ${Buffer.byteLength(text)}`, 'Cache-Control: no-store', 'Connection: close'];
    for (const [k, v] of Object.entries(headers)) head.push(`${k}: ${v}`);
    socket.end(`${head.join('\r\n')}\r\n\r\n${text}`);
  }

  async function onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const url = new URL(venueAliasRewrite(req.url ?? '/'), 'http://replay.invalid');
    const replay = BY_PATH.get(url.pathname);
    if (replay === undefined) return refuse(socket, 404, errorBody('not_found', `no websocket at ${url.pathname}`));
    socket.on('error', () => undefined);
    const started = Date.now();
    const requestId = randomUUID();
    let release: (() => void) | null = null;
    let reservation: Reservation | null = null;
    let logged: { key_id: string; user_id: string; plan: Plan } | null = null;
    let window: ReplayQuery;
    try {
      const apiKey = url.searchParams.get('api_key');
      const header = req.headers.authorization ?? (apiKey !== null ? `Bearer ${apiKey}` : undefined);
      const key = await keys.authenticate(header);
      window = parseWindow(url.searchParams, replay.venue);
      const plan = await subscriptions.planOf(key.user_id);
      logged = { key_id: key.key_id, user_id: key.user_id, plan };
      release = limiter.tryAcquire(key.key_id, cap);
      if (release === null) {
        return refuse(
          socket,
          429,
          {
            ...errorBody('too_many_concurrent_requests', `this API key already runs ${cap} replay${cap === 1 ? '' : 's'} in this API process, the most one key may (API_REPLAYS_PER_KEY); retry when one of them has ended`),
            concurrency: { limit: 'replays', allowed: cap, retry_after_seconds: 1 },
          },
          { 'Retry-After': '1' },
        );
      }
      const units = daysOfWindow(window.fromMs, window.toMs);
      const r = await quota.reserve(key.user_id, plan, requestId, units);
      if (!r.ok) {
        release();
        return refuse(socket, 429, quotaExceededBody(r.exceeded), { 'Retry-After': String(r.exceeded.retryAfterS) });
      }
      reservation = r.reservation;
    } catch (e) {
      release?.();
      if (e instanceof ApiError) return refuse(socket, e.statusCode, errorBody(e.code, e.message, e.param));
      if (isUnavailable(e)) return refuse(socket, 503, errorBody('service_unavailable', 'a backing service is unavailable, retry later'));
      log.error({ err: e }, 'replay admission failed');
      return refuse(socket, 500, errorBody('internal_error', 'internal error'));
    }

    const settle = (outcome: ReplayOutcome, bytes: number) => {
      release?.();
      const ok = outcome === 'done';
      const endpoint = url.pathname.slice(API_PREFIX.length);
      requestLog.add({
        ts: started,
        request_id: requestId,
        user_id: logged!.user_id,
        key_id: logged!.key_id,
        plan: logged!.plan,
        endpoint,
        venue: replay.venue,
        market: '',
        params: paramsJson({ from: window.fromMs, to: window.toMs, ...(window.speed !== null ? { speed: window.speed } : {}), outcome }),
        status: ok ? 200 : outcome === 'client_left' || outcome === 'no_subscribe' ? 499 : outcome === 'failed' ? 500 : outcome === 'busy' || outcome === 'shutdown' ? 503 : 400,
        billable: 1,
        latency_ms: Date.now() - started,
        bytes,
        units: reservation!.units,
      });
      quota.settle(reservation!, ok);
    };

    if (socket.destroyed) return settle('client_left', 0);
    wss.handleUpgrade(req, socket, head, (ws) => {
      live.add(ws);
      let bytes = 0;
      const w: ReplayWindow = { ...window, log, sent: (n) => void (bytes += n) };
      replay.run(ws, w, services).then((outcome) => {
        live.delete(ws);
        settle(outcome, bytes);
      }, (e: unknown) => {
        live.delete(ws);
        log.error({ err: e }, 'replay ended with an error');
        settle('failed', bytes);
      });
    });
  }

  const listener = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    onUpgrade(req, socket, head).catch((e: unknown) => {
      log.error({ err: e }, 'replay upgrade failed');
      socket.destroy();
    });
  };
  app.server.on('upgrade', listener);
  app.addHook('onClose', async () => {
    app.server.off('upgrade', listener);
    for (const ws of live) ws.close(1001, 'server shutting down');
    wss.close();
  });

  // The path in the OpenAPI document, with its parameters; a GET without an upgrade gets 426.
  const upgradeRequired = errorSchema.describe('Not a websocket upgrade: connect with a websocket client.');
  const common = ' The key goes in `Authorization: Bearer` or the `api_key` parameter. A replay counts one unit per UTC day of the window when it was sent to its end; at most API_REPLAYS_PER_KEY (default 2) run at once per key. docs/api.md, "Replay over the venues\' websockets".';
  for (const d of REPLAYS) {
    app.get(
      d.path,
      {
        schema: {
          summary: d.summary,
          description: d.description + common,
          tags: [d.venue],
          security: [...KEY_SECURITY, { apiKeyQuery: [] }],
          querystring: z.object({
            from: q.timestamp('Window start', 'start'),
            to: q.timestamp('Window end', 'end'),
            speed: optionalField(parseSpeed, 'Factor of real time (1: as the events happened; 10: ten times faster). Without it: as fast as the client reads.', { maximum: SPEED_MAX }),
            api_key: optionalField((r): Parsed<string> => ({ ok: true, value: r }), 'The API key, for clients that cannot set headers.'),
          }),
          response: { 426: upgradeRequired, ...errors, 429: tooManyRequestsSchema },
        },
        config: { billable: false },
        // The key first, as for the upgrade (header or api_key): then the parameters, then 426.
        onRequest: async (req) => {
          const apiKey = (req.query as Record<string, unknown>).api_key;
          await keys.authenticate(req.headers.authorization ?? (typeof apiKey === 'string' ? `Bearer ${apiKey}` : undefined));
        },
      },
      async (_req, reply) => reply.code(426).header('upgrade', 'websocket').send(errorBody('bad_request', 'this is a websocket: connect with a websocket client (Upgrade: websocket)')),
    );
  }
};
