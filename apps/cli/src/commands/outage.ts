import { parseInstant, parseReason } from '@booktape/api/outage-params';
import { parseVenueArg } from '../args.ts';

/**
 * `booktape outage add|list|remove`: declared outages. The running service holds the
 * embedded store, so this talks to its API (POST/GET/DELETE /api/v1/outages), sending
 * ADMIN_TOKEN as X-Admin-Token when it is set. Exit codes: 0 done, 1 refused or failed
 * (the API's message is printed), 2 bad arguments (checked here before any request).
 */

export class OutageUsageError extends Error {}

export type OutageCommand =
  | { action: 'add'; api: string; venue: string; from: number; to: number; reason: string }
  | { action: 'list'; api: string; venue?: string; json: boolean }
  | { action: 'remove'; api: string; id: string };

export interface OutageArgs {
  positionals: string[];
  venue?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
  reason?: string | undefined;
  api?: string | undefined;
  json?: boolean | undefined;
}

/** The API base URL: --api, else http://HOST:PORT (a wildcard HOST means this machine). */
export function apiBase(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  let raw = flag;
  if (raw === undefined) {
    const host = !env.HOST || env.HOST === '0.0.0.0' || env.HOST === '::' ? '127.0.0.1' : env.HOST;
    raw = `http://${host.includes(':') ? `[${host}]` : host}:${env.PORT || '8080'}`;
  }
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new OutageUsageError(`--api must be a URL such as http://127.0.0.1:8080, got ${JSON.stringify(raw)}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new OutageUsageError(`--api must be an http(s) URL, got ${JSON.stringify(raw)}`);
  return u.origin;
}

/** Checks the arguments of `outage …` (pure): what to send, or a usage error. */
export function parseOutageCommand(a: OutageArgs, env: NodeJS.ProcessEnv = process.env): OutageCommand {
  const [action, ...rest] = a.positionals;
  const api = apiBase(a.api, env);
  const venue = (v: string | undefined) => {
    try {
      return parseVenueArg(v);
    } catch (e) {
      throw new OutageUsageError((e as Error).message);
    }
  };
  switch (action) {
    case 'add': {
      if (rest.length > 0) throw new OutageUsageError(`outage add takes no positional arguments, got ${JSON.stringify(rest.join(' '))}`);
      if (a.venue === undefined) throw new OutageUsageError('outage add needs --venue (a, b, exchange-a, exchange-b, polymarket or kalshi)');
      const v = venue(a.venue);
      const times: number[] = [];
      for (const [name, raw] of [['--from', a.from], ['--to', a.to]] as const) {
        if (raw === undefined) throw new OutageUsageError(`outage add needs ${name} (YYYY-MM-DD, an ISO time with a zone, or Unix seconds/ms)`);
        const r = parseInstant(raw);
        if (!r.ok) throw new OutageUsageError(`${name} ${r.message}`);
        times.push(r.value);
      }
      if (times[0]! >= times[1]!) throw new OutageUsageError(`--to (${new Date(times[1]!).toISOString()}) must be after --from (${new Date(times[0]!).toISOString()})`);
      const reason = parseReason(a.reason ?? '');
      if (a.reason === undefined) throw new OutageUsageError('outage add needs --reason "…"');
      if (!reason.ok) throw new OutageUsageError(`--reason ${reason.message}`);
      return { action: 'add', api, venue: v, from: times[0]!, to: times[1]!, reason: reason.value };
    }
    case 'list':
      if (rest.length > 0) throw new OutageUsageError(`outage list takes no positional arguments, got ${JSON.stringify(rest.join(' '))}`);
      for (const f of ['from', 'to', 'reason'] as const) if (a[f] !== undefined) throw new OutageUsageError(`--${f} is for outage add`);
      return { action: 'list', api, ...(a.venue !== undefined ? { venue: venue(a.venue) } : {}), json: a.json ?? false };
    case 'remove': {
      if (rest.length !== 1) throw new OutageUsageError('outage remove needs exactly one outage id (see outage list)');
      if (!/^out_[0-9a-f]{16}$/.test(rest[0]!)) throw new OutageUsageError(`${JSON.stringify(rest[0])} is not an outage id (out_ + 16 hex digits; see outage list)`);
      for (const f of ['venue', 'from', 'to', 'reason'] as const) if (a[f] !== undefined) throw new OutageUsageError(`--${f} is for outage add`);
      return { action: 'remove', api, id: rest[0]! };
    }
    default:
      throw new OutageUsageError(`outage needs add, list or remove${action === undefined ? '' : `, got ${JSON.stringify(action)}`}`);
  }
}

interface OutageJson {
  id: string;
  venue: string;
  start: string;
  end: string;
  reason: string;
}

const line = (o: OutageJson) => `${o.id}  ${o.venue}  ${o.start} → ${o.end}  ${o.reason}`;

const isOutage = (v: unknown): v is OutageJson =>
  typeof v === 'object' && v !== null && ['id', 'venue', 'start', 'end', 'reason'].every((k) => typeof (v as Record<string, unknown>)[k] === 'string');

export async function runOutage(cmd: OutageCommand, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (env.ADMIN_TOKEN) headers['x-admin-token'] = env.ADMIN_TOKEN;
  let url: string;
  let init: RequestInit;
  if (cmd.action === 'add') {
    url = `${cmd.api}/api/v1/outages`;
    init = { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ venue: cmd.venue, from: cmd.from, to: cmd.to, reason: cmd.reason }) };
  } else if (cmd.action === 'list') {
    url = `${cmd.api}/api/v1/outages${cmd.venue ? `?venue=${cmd.venue}` : ''}`;
    init = { method: 'GET', headers };
  } else {
    url = `${cmd.api}/api/v1/outages/${cmd.id}`;
    init = { method: 'DELETE', headers };
  }
  let res: Response;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  } catch (e) {
    process.stderr.write(`booktape: cannot reach the API at ${cmd.api} (${(e as Error).cause instanceof Error ? ((e as Error).cause as Error).message : (e as Error).message}); is the service running (npm start)? Use --api URL otherwise.\n`);
    return 1;
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  if (!res.ok) {
    const msg = (body as { error?: { message?: string } } | null)?.error?.message ?? text.slice(0, 200);
    process.stderr.write(`booktape: the API refused (${res.status}): ${msg}${res.status === 401 ? ' (set ADMIN_TOKEN to the service\'s admin token)' : ''}\n`);
    return 1;
  }
  // A server that is not this API (a wrong --api, a proxy's page) can answer 2xx too.
  const data = (body as { data?: unknown } | null)?.data;
  if (cmd.action === 'list' ? !(Array.isArray(data) && data.every(isOutage)) : !isOutage(data)) {
    process.stderr.write(`booktape: ${url} answered ${res.status} but not with booktape's outage JSON (${JSON.stringify(text.slice(0, 80))}); is --api the booktape API?\n`);
    return 1;
  }
  if (cmd.action === 'list') {
    const list = data as OutageJson[];
    if (cmd.json) process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
    else if (list.length === 0) process.stdout.write('no declared outages\n');
    else process.stdout.write(`${list.map(line).join('\n')}\n`);
  } else {
    process.stdout.write(`${cmd.action === 'add' ? 'declared' : 'removed'} ${line(data as OutageJson)}\n`);
  }
  return 0;
}
