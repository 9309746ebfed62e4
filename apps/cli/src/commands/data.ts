import { BooktapeClient, BooktapeError } from '@booktape/client';
import type { Venue } from '@booktape/domain';
import {
  UsageError,
  parseAssetArg,
  parseDateArg,
  parseFormatArg,
  parseIntArg,
  parseKeyIdArg,
  parseMarketArg,
  parseTextArg,
  parseTimeArg,
  parseVenueArg,
  VENUE_SHAPES,
  type Format,
} from '../args.ts';
import { openOutput, RecordWriter, writeOne, type Output } from '../output.ts';
import { apiBase } from './outage.ts';

/**
 * The user commands (`markets`, `raw`, `summary`, `book`, `status`, `keys …`): the running
 * API through the TypeScript SDK (@booktape/client), written to stdout or `--out FILE` as
 * json, ndjson or csv. Arguments are checked before any request (exit 2); a refused or
 * failed request exits 1 with the API's message; a file appears only once complete.
 */

/** What every user command takes: where the API is, the key, how and where to write. */
export interface Common {
  api: string;
  key: string | undefined;
  adminToken: string | undefined;
  format: Format;
  out: string | undefined;
}

type Window = { date: string } | { from: number; to: number };

/**
 * An exchange A market named by its slug (or URL), and an outcome by its name: sent to the
 * API as they are (`slug`, `outcome`), which resolves them by its own rules (docs/api.md,
 * "Slug and outcome") and says the ids it used in X-Resolved-Condition-Id / -Asset-Id.
 */
export interface SlugRef {
  slug: string;
  outcome: string | undefined;
}

export type DataCommand = Common &
  (
    | { what: 'markets'; venue: Venue; prefix: string | undefined }
    | { what: 'raw'; venue: Venue; market: string; window: Window; slug?: SlugRef }
    | { what: 'summary'; venue: Venue; market: string; asset: string | undefined; window: Window; resolution: number | undefined; slug?: SlugRef }
    | { what: 'book'; venue: Venue; market: string | undefined; asset: string | undefined; at: number; depth: number | undefined; slug?: SlugRef }
    | { what: 'status'; venue: Venue | undefined }
    | { what: 'keys-create'; userId: string; name: string }
    | { what: 'keys-list'; userId: string }
    | { what: 'keys-revoke'; userId: string; keyId: string }
  );

/** The flags as commander hands them over (all text). */
export interface DataFlags {
  venue?: string;
  conditionId?: string;
  ticker?: string;
  market?: string;
  slug?: string;
  outcome?: string;
  assetId?: string;
  prefix?: string;
  from?: string;
  to?: string;
  date?: string;
  at?: string;
  resolution?: string;
  depth?: string;
  userId?: string;
  name?: string;
  api?: string;
  key?: string;
  format?: string;
  out?: string;
}

function common(f: DataFlags, env: NodeJS.ProcessEnv, needsKey: boolean): Common {
  let api: string;
  try {
    api = apiBase(f.api, env);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const key = f.key ?? (env.BOOKTAPE_API_KEY || undefined);
  if (needsKey && !key) throw new UsageError('an API key is needed: --key or BOOKTAPE_API_KEY (booktape keys create makes one)');
  if (f.out === '') throw new UsageError('--out needs a file name');
  return { api, key, adminToken: env.ADMIN_TOKEN || undefined, format: parseFormatArg(f.format), out: f.out };
}

/** The market, named by the API's parameter of its venue (`--condition-id` / `--ticker`) or by `--market`. */
function market(venue: Venue, f: DataFlags, required: boolean): string | undefined {
  const shape = VENUE_SHAPES[venue];
  const flag = (o: '--condition-id' | '--ticker') => (o === '--condition-id' ? f.conditionId : f.ticker);
  if (flag(shape.otherMarketOption) !== undefined) throw new UsageError(`${shape.otherMarketOption} is not for ${shape.label}, which names a market by ${shape.marketOption}`);
  const given = flag(shape.marketOption);
  if (given !== undefined && f.market !== undefined) throw new UsageError(`give ${shape.marketOption} or --market, not both`);
  const raw = given ?? f.market;
  if (raw === undefined && !required) return undefined;
  return parseMarketArg(venue, raw, given !== undefined || raw === undefined ? shape.marketOption : '--market');
}

/** `--asset-id`: an outcome token, on a venue whose books are per token; `needed` when the command reads one token's book. */
function asset(venue: Venue, f: DataFlags, what: string, needed: boolean, bySlug: boolean): string | undefined {
  const shape = VENUE_SHAPES[venue];
  if (!shape.tokens && f.assetId !== undefined) throw new UsageError(`--asset-id is not for ${shape.label}: a ${shape.marketOption.slice(2)} is its own book`);
  if (shape.tokens && needed && f.assetId === undefined && !bySlug) throw new UsageError(`${what} on ${shape.label} reads one outcome token's book: --asset-id is required`);
  return f.assetId === undefined ? undefined : parseAssetArg(f.assetId, '--asset-id');
}

/** `--date D`, or `--from T --to T` (inclusive; an end covers the whole unit given). */
function window(f: DataFlags, dateAllowed: boolean): Window {
  if (f.date !== undefined) {
    if (!dateAllowed) throw new UsageError('--date is not taken here; give --from and --to');
    if (f.from !== undefined || f.to !== undefined) throw new UsageError('give --date or --from/--to, not both');
    return { date: parseDateArg(f.date, '--date') };
  }
  if (f.from === undefined && f.to === undefined) throw new UsageError(dateAllowed ? 'give --date D, or --from T and --to T' : 'give --from T and --to T');
  const from = parseTimeArg(f.from, '--from', 'first');
  const to = parseTimeArg(f.to, '--to', 'last');
  if (from > to) throw new UsageError(`--from (${new Date(from).toISOString()}) is after --to (${new Date(to).toISOString()})`);
  return { from, to };
}

function only(f: DataFlags, what: string, allowed: Array<keyof DataFlags>): void {
  const names: Record<string, string> = { conditionId: '--condition-id', assetId: '--asset-id', userId: '--user-id' };
  for (const k of Object.keys(f) as Array<keyof DataFlags>) {
    if (f[k] !== undefined && !allowed.includes(k)) throw new UsageError(`${names[k] ?? `--${k}`} is not an option of ${what}`);
  }
}

const COMMON: Array<keyof DataFlags> = ['api', 'key', 'format', 'out'];
const MARKET: Array<keyof DataFlags> = ['venue', 'conditionId', 'ticker', 'market', 'slug', 'outcome'];

/**
 * `--slug S [--outcome NAME]`: exchange A only, instead of `--condition-id` (and of
 * `--asset-id` when an outcome is named). `outcomeWanted`: `token` when the command reads one
 * outcome token's book, `no` when it reads the whole market.
 */
function slugRef(venue: Venue, f: DataFlags, what: string, outcomeWanted: 'no' | 'token'): SlugRef | undefined {
  if (f.slug === undefined) {
    if (f.outcome !== undefined) throw new UsageError('--outcome names an outcome of the market given by --slug');
    return undefined;
  }
  if (!VENUE_SHAPES[venue].tokens) throw new UsageError(`--slug names an exchange A (polymarket) market; ${VENUE_SHAPES[venue].label} names a market by ${VENUE_SHAPES[venue].marketOption}`);
  if (f.conditionId !== undefined || f.market !== undefined) throw new UsageError('give --slug or --condition-id/--market, not both');
  if (outcomeWanted === 'no' && f.outcome !== undefined) throw new UsageError(`${what} reads every outcome of the market: --outcome is not taken here`);
  if (f.outcome !== undefined && f.assetId !== undefined) throw new UsageError('give --outcome or --asset-id, not both');
  // As the API takes them: with a slug, the token is named by its outcome.
  if (f.assetId !== undefined) throw new UsageError('with --slug, name the outcome token by --outcome (its name), not by --asset-id');
  if (outcomeWanted === 'token' && f.outcome === undefined) throw new UsageError(`${what} reads one outcome token's book: with --slug, name it by --outcome (Yes, No, …)`);
  return { slug: parseTextArg(f.slug, '--slug', 2048), outcome: f.outcome === undefined ? undefined : parseTextArg(f.outcome, '--outcome', 256) };
}

/** Checks a user command's flags (pure): what to ask the API for, or a usage error. */
export function parseDataCommand(what: DataCommand['what'], f: DataFlags, env: NodeJS.ProcessEnv = process.env): DataCommand {
  switch (what) {
    case 'markets': {
      only(f, what, ['venue', 'prefix', ...COMMON]);
      const c = common(f, env, true);
      const venue = parseVenueArg(f.venue);
      if (f.prefix !== undefined && !VENUE_SHAPES[venue].prefix.test(f.prefix)) throw new UsageError(`--prefix ${JSON.stringify(f.prefix)} is not ${VENUE_SHAPES[venue].prefixRule}`);
      return { ...c, what, venue, prefix: f.prefix };
    }
    case 'raw': {
      only(f, what, [...MARKET, 'from', 'to', 'date', ...COMMON]);
      const c = common(f, env, true);
      const venue = parseVenueArg(f.venue);
      const slug = slugRef(venue, f, what, 'no');
      return { ...c, what, venue, market: slug ? '' : market(venue, f, true)!, window: window(f, true), ...(slug ? { slug } : {}) };
    }
    case 'summary': {
      only(f, what, [...MARKET, 'assetId', 'from', 'to', 'date', 'resolution', ...COMMON]);
      const c = common(f, env, true);
      const venue = parseVenueArg(f.venue);
      const slug = slugRef(venue, f, what, 'token');
      const m = slug ? '' : market(venue, f, true)!;
      return { ...c, what, venue, market: m, asset: asset(venue, f, what, true, slug !== undefined), window: window(f, true), resolution: parseIntArg(f.resolution, '--resolution', 1, 3600), ...(slug ? { slug } : {}) };
    }
    case 'book': {
      only(f, what, [...MARKET, 'assetId', 'at', 'depth', ...COMMON]);
      const c = common(f, env, true);
      const venue = parseVenueArg(f.venue);
      const slug = slugRef(venue, f, what, 'token');
      const a = asset(venue, f, what, true, slug !== undefined);
      // A token names its market: the market is optional where books are per token.
      const m = slug ? undefined : market(venue, f, !VENUE_SHAPES[venue].tokens);
      return { ...c, what, venue, market: m, asset: a, at: parseTimeArg(f.at, '--at', 'first'), depth: parseIntArg(f.depth, '--depth', 1, 500), ...(slug ? { slug } : {}) };
    }
    case 'status': {
      only(f, what, ['venue', 'api', 'format', 'out']);
      const c = common(f, env, false);
      return { ...c, what, venue: f.venue === undefined ? undefined : parseVenueArg(f.venue) };
    }
    case 'keys-create':
      only(f, 'keys create', ['userId', 'name', 'api', 'format', 'out']);
      return { ...common(f, env, false), what, userId: parseTextArg(f.userId, '--user-id', 128), name: parseTextArg(f.name, '--name', 100) };
    case 'keys-list':
      only(f, 'keys list', ['userId', 'api', 'format', 'out']);
      return { ...common(f, env, false), what, userId: parseTextArg(f.userId, '--user-id', 128) };
    case 'keys-revoke':
      throw new Error('keys revoke is parsed by parseKeysRevoke');
  }
}

export function parseKeysRevoke(keyId: string | undefined, f: DataFlags, env: NodeJS.ProcessEnv = process.env): DataCommand {
  only(f, 'keys revoke', ['userId', 'api', 'format', 'out']);
  return { ...common(f, env, false), what: 'keys-revoke', keyId: parseKeyIdArg(keyId), userId: parseTextArg(f.userId, '--user-id', 128) };
}

/** The SDK's market parameter of a venue. */
const marketParam = (venue: Venue, m: string) => ({ [VENUE_SHAPES[venue].marketParam]: m });
/** The market (and the outcome token): by slug and outcome name when given so, else by ids. */
const marketOf = (cmd: { venue: Venue; market: string | undefined; slug?: SlugRef | undefined }) =>
  cmd.slug !== undefined ? { slug: cmd.slug.slug, ...(cmd.slug.outcome !== undefined ? { outcome: cmd.slug.outcome } : {}) } : cmd.market !== undefined ? marketParam(cmd.venue, cmd.market) : {};
const timeParams = (w: Window) => ('date' in w ? { date: w.date } : { from: w.from, to: w.to });

type KeyItem = Awaited<ReturnType<BooktapeClient['keys']['list']>>['api_keys'][number];
/** Every field of a listed key, in the API's order: a CSV of keys has them all, whichever key carries which. */
export const KEY_COLUMNS = ['id', 'name', 'status', 'created_at', 'last_used_at'] as const satisfies ReadonlyArray<keyof KeyItem>;
// A field the API adds to a listed key fails the typecheck here until it is added above.
const keyColumnsComplete: Exclude<keyof KeyItem, (typeof KEY_COLUMNS)[number]> extends never ? true : never = true;
void keyColumnsComplete;
/** A book in CSV: one row per price level, its side first. */
const BOOK_COLUMNS = ['side', 'price', 'size'] as const;

async function produce(cmd: DataCommand, client: BooktapeClient, out: Output): Promise<number> {
  const v = (venue: Venue) => client[VENUE_SHAPES[venue].sdk] as BooktapeClient['exchangeA'];
  const list = async (items: AsyncIterable<unknown> | Iterable<unknown>, columns?: readonly string[]) => {
    const w = new RecordWriter(out, cmd.format, columns);
    for await (const r of items) await w.add(r);
    return w.end();
  };
  switch (cmd.what) {
    case 'markets': {
      const name = VENUE_SHAPES[cmd.venue].marketField;
      const ids = v(cmd.venue).markets(cmd.prefix !== undefined ? { prefix: cmd.prefix } : {});
      return list((async function* () {
        for await (const id of ids) yield { [name]: id };
      })(), [name]);
    }
    case 'raw': {
      const params = { ...marketOf(cmd), ...timeParams(cmd.window) } as never;
      if (cmd.format === 'csv') {
        // The API's own long CSV (one row per price level change), page by page.
        let rows = 0;
        for await (const text of v(cmd.venue).rawCsv(params)) {
          rows += text.split('\n').length - 1;
          await out.write(text);
        }
        return Math.max(0, rows - 1);
      }
      return list('date' in cmd.window ? v(cmd.venue).rawByDate(params) : v(cmd.venue).raw(params));
    }
    case 'summary': {
      const params = { ...marketOf(cmd), ...(cmd.asset !== undefined ? { assetId: cmd.asset } : {}), ...timeParams(cmd.window), resolution: cmd.resolution } as never;
      if (cmd.format === 'csv') {
        const text = await v(cmd.venue).summaryCsv(params);
        await out.write(text);
        return Math.max(0, text.split('\n').filter((l) => l !== '').length - 1);
      }
      return list((await v(cmd.venue).summary(params)).data as unknown[]);
    }
    case 'book': {
      const params = { ...marketOf(cmd), ...(cmd.asset !== undefined ? { assetId: cmd.asset } : {}), at: cmd.at, depth: cmd.depth } as never;
      const book = (await v(cmd.venue).book(params)) as unknown as Record<string, unknown>;
      if (cmd.format !== 'csv') {
        await writeOne(out, cmd.format, book);
        return 1;
      }
      // In CSV, the levels: one row per price level, its side first (bid/ask on A, yes/no on B).
      const sides = VENUE_SHAPES[cmd.venue].bookSides;
      const rows = sides.flatMap((side) => ((book[side] ?? []) as Array<{ price: string; size: string }>).map((l) => ({ side, price: l.price, size: l.size })));
      const w = new RecordWriter(out, 'csv', BOOK_COLUMNS);
      for (const r of rows) await w.add(r);
      return w.end();
    }
    case 'status': {
      const s = await client.monitoringStatus();
      const shown = cmd.venue === undefined ? s : { ...s, venues: s.venues.filter((x) => x.venue === cmd.venue) };
      await writeOne(out, cmd.format, shown);
      return 1;
    }
    case 'keys-create': {
      const r = await client.keys.create({ userId: cmd.userId, name: cmd.name });
      await writeOne(out, cmd.format, r.data);
      return 1;
    }
    case 'keys-list':
      return list((await client.keys.list({ userId: cmd.userId })).api_keys, KEY_COLUMNS);
    case 'keys-revoke': {
      const r = await client.keys.revoke({ userId: cmd.userId, keyId: cmd.keyId });
      await writeOne(out, cmd.format, r.data);
      return 1;
    }
  }
}

/** The ids the API used for a slug and outcome (X-Resolved-Condition-Id / X-Resolved-Asset-Id). */
export interface Resolved {
  conditionId: string | undefined;
  assetId: string | undefined;
}

/** A fetch that notes the ids the API resolved a slug (and outcome) to, from its answers' headers. */
export function noteResolved(resolved: Resolved, inner: typeof fetch = fetch): (input: string, init: RequestInit) => Promise<Response> {
  return async (input, init) => {
    const res = await inner(input, init);
    resolved.conditionId ??= res.headers.get('x-resolved-condition-id') ?? undefined;
    resolved.assetId ??= res.headers.get('x-resolved-asset-id') ?? undefined;
    return res;
  };
}

/** What the names stood for, so the answer can be read (and the next call made) by ids. */
export function resolvedLine(ref: SlugRef, r: Resolved): string {
  return `booktape: ${ref.slug}${ref.outcome !== undefined ? ` outcome ${JSON.stringify(ref.outcome)}` : ''} is condition_id ${r.conditionId ?? '?'}${r.assetId !== undefined ? `, asset_id ${r.assetId}` : ''}\n`;
}

/**
 * The API's refusal of a slug or an outcome (no such market, an event of several markets, an
 * outcome the market does not have): its own message, which names what would do. Null for
 * any other failure (a slug the API cannot look up now is a 503: a failure to retry).
 */
export function slugRefusal(e: unknown): string | null {
  if (!(e instanceof BooktapeError) || (e.status !== 400 && e.status !== 404)) return null;
  if (e.parameter !== 'slug' && e.parameter !== 'outcome') return null;
  return `the API refused the ${e.parameter === 'slug' ? '--slug' : '--outcome'} (${e.status} ${e.code}): ${e.message}`;
}

/** Runs a user command: 0 written, 1 the API refused or could not be reached (nothing left in --out), 2 a slug or outcome that names no single market. */
export async function runDataCommand(cmd: DataCommand): Promise<number> {
  const slug = 'slug' in cmd ? cmd.slug : undefined;
  const resolved: Resolved = { conditionId: undefined, assetId: undefined };
  const client = new BooktapeClient({
    baseUrl: cmd.api,
    ...(slug !== undefined ? { fetch: noteResolved(resolved) } : {}),
    ...(cmd.key !== undefined ? { apiKey: cmd.key } : {}),
    // The operator's token on the operator routes only; a user command does not send it around.
    ...(cmd.what.startsWith('keys-') && cmd.adminToken !== undefined ? { headers: { 'x-admin-token': cmd.adminToken } } : {}),
    maxRetries: 2,
  });
  const out = openOutput(cmd.out);
  try {
    const n = await produce(cmd, client, out);
    await out.commit();
    if (slug !== undefined) process.stderr.write(resolvedLine(slug, resolved));
    if (cmd.out !== undefined) process.stderr.write(`booktape: wrote ${cmd.out} (${n} record${n === 1 ? '' : 's'})\n`);
    return 0;
  } catch (e) {
    await out.abort();
    const refused = slug !== undefined ? slugRefusal(e) : null;
    process.stderr.write(`booktape: ${refused ?? failure(e, cmd.api, cmd.what.startsWith('keys-'))}\n`);
    return refused !== null ? 2 : 1;
  }
}

/** A failed request in words: the API's refusal with its code, or where the API was not. `operator`: an ADMIN_TOKEN route. */
export function failure(e: unknown, api: string, operator = false): string {
  if (e instanceof BooktapeError) {
    if (e.code === 'http_error' || e.code === 'invalid_response') return `${api} did not answer as the booktape API (${e.message.slice(0, 160)}); is --api the booktape API?`;
    const hint = e.status === 401 && operator ? ' (set ADMIN_TOKEN to the service\'s admin token)' : e.status === 401 ? ' (check --key or BOOKTAPE_API_KEY)' : '';
    return `the API refused (${e.status} ${e.code}${e.parameter ? `, ${e.parameter}` : ''}): ${e.message}${hint}`;
  }
  const err = e as Error;
  if (err.name === 'TypeError' && /fetch failed/.test(err.message)) {
    const cause = err.cause instanceof Error ? err.cause.message : err.message;
    return `cannot reach the API at ${api} (${cause}); is the service running (npm start)? Use --api URL otherwise.`;
  }
  return err.message;
}
