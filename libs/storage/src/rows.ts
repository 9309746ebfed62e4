import type { ClickHouse } from './clickhouse.ts';

/** 'YYYY-MM-DD HH:MM:SS.mmm' in UTC: unambiguous text for a DateTime64(3, 'UTC') column. */
export function chTime(at: string | number): string {
  return new Date(at).toISOString().replace('T', ' ').replace('Z', '');
}

/** The rows of a query whose values are all bound: `{name:Type}` in the SQL, `params` beside it. */
export async function queryRows<T>(ch: ClickHouse, query: string, params: Record<string, unknown> = {}): Promise<T[]> {
  const rs = await ch.client.query({ query, query_params: params, format: 'JSONEachRow' });
  return rs.json<T>();
}

/** The first row of such a query, or null when it has none. */
export async function queryFirst<T>(ch: ClickHouse, query: string, params: Record<string, unknown> = {}): Promise<T | null> {
  const [row] = await queryRows<T>(ch, query, params);
  return row ?? null;
}

/** Inserts rows into `table` (a name `ch.table` qualifies) as JSON objects. */
export async function insertRows(ch: ClickHouse, table: string, values: readonly Record<string, unknown>[]): Promise<void> {
  await ch.client.insert({ table: ch.table(table), values, format: 'JSONEachRow' });
}
