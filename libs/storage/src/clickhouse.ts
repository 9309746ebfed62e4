import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { mkdirSync } from 'node:fs';

export interface ClickHouseConfig {
  /** http(s)://… selects a ClickHouse server; unset selects the embedded engine. */
  url?: string | undefined;
  username?: string | undefined;
  password?: string | undefined;
  database: string;
  /** Directory of the embedded engine's data (one process per directory). */
  embeddedPath: string;
  /** Cluster name: selects the Replicated + Distributed variant of the DDL. */
  cluster?: string | undefined;
}

export interface ClickHouse {
  client: ClickHouseClient;
  database: string;
  mode: 'embedded' | 'server';
  cluster: string | undefined;
  /** Embedded mode: the engine's directory (another chdb Session may open the same path). */
  embeddedPath: string | undefined;
  /** `db.table`, so SQL never depends on the connection's default database. */
  table(name: string): string;
  close(): Promise<void>;
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

type CloseHook = () => void | Promise<void>;
const closeHooks = new WeakMap<ClickHouse, CloseHook[]>();

/**
 * Runs `fn` when `ch` closes, before its client does, in the order registered: what holds
 * the engine open beside the client (the stream sessions) shuts itself down this way, so the
 * handle needs to know nothing of it. Kept apart from the ClickHouse interface so that
 * handles built by hand (tests' dead servers) stay plain objects.
 */
export function onClickHouseClose(ch: ClickHouse, fn: CloseHook): void {
  const hooks = closeHooks.get(ch);
  if (hooks) hooks.push(fn);
  else closeHooks.set(ch, [fn]);
}

/**
 * Settings the code relies on, set on every query so the embedded engine and a server
 * agree (their defaults differ: the embedded engine writes 64-bit integers as bare JSON
 * numbers, a server quotes them; ingest_seq exceeds 2^53 and must stay exact).
 *
 * On the embedded engine they are set once, on the connection's session (see below).
 * Never put per-call settings such as insert_deduplication_token here or in
 * `clickhouse_settings`: the embedded connection applies them as session-wide `SET`s that
 * outlive the call (an insert without a token would then be dropped as a duplicate of the
 * last tokenised one). Per-call settings go into the statement's own SETTINGS clause.
 */
const STABLE_SETTINGS = {
  output_format_json_quote_64bit_integers: 1,
  output_format_json_quote_decimals: 0,
  date_time_input_format: 'best_effort',
} as const;

export async function openClickHouse(cfg: ClickHouseConfig): Promise<ClickHouse> {
  if (!IDENT.test(cfg.database)) throw new Error(`CLICKHOUSE_DATABASE: not a valid identifier: ${cfg.database}`);
  if (cfg.cluster !== undefined && !IDENT.test(cfg.cluster)) throw new Error(`CLICKHOUSE_CLUSTER: not a valid identifier: ${cfg.cluster}`);
  let client: ClickHouseClient;
  let mode: ClickHouse['mode'];
  if (cfg.url) {
    mode = 'server';
    client = createClient({
      url: cfg.url,
      username: cfg.username ?? 'default',
      password: cfg.password ?? '',
      clickhouse_settings: STABLE_SETTINGS,
      request_timeout: 120_000,
    });
  } else {
    mode = 'embedded';
    mkdirSync(cfg.embeddedPath, { recursive: true });
    // Loaded lazily: a server deployment never loads the native engine.
    const { createChdbConnection } = await import('chdb/connection');
    // Set once on the connection's session, where they stay: given as the client's
    // clickhouse_settings they would be sent as three `SET`s ahead of every statement (about
    // 1 ms of each query: a book answer's state read paid it). Streams (stream.ts) read on
    // sessions of their own and put what they need into their SQL.
    client = createClient({ connection: createChdbConnection({ path: cfg.embeddedPath }) } as Parameters<typeof createClient>[0]);
    for (const [k, v] of Object.entries(STABLE_SETTINGS)) await client.command({ query: `SET ${k} = ${typeof v === 'number' ? v : sqlString(v)}` });
  }
  const onCluster = cfg.cluster ? ` ON CLUSTER ${cfg.cluster}` : '';
  await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${cfg.database}${onCluster}` });
  let closed = false;
  const handle: ClickHouse = {
    client,
    database: cfg.database,
    mode,
    cluster: cfg.cluster,
    embeddedPath: mode === 'embedded' ? cfg.embeddedPath : undefined,
    table: (name) => `${cfg.database}.${name}`,
    close: async () => {
      if (closed) return;
      closed = true;
      for (const fn of closeHooks.get(handle) ?? []) await fn();
      closeHooks.delete(handle);
      await client.close();
    },
  };
  return handle;
}

/** Quote a string as a ClickHouse SQL literal (only for settings values, never for data). */
export function sqlString(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}
