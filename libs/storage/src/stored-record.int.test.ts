import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { RAW_TABLE } from './raw-events.repository.ts';
import { STORED_RECORD_COLUMNS } from './stored-record.ts';

/**
 * The stored record an export carries (include=record) must be every column a raw table
 * stores for a record: a column a later migration adds and the list forgets would be lost
 * on the way through an export and an import. `source` is the importer's, `inserted_at`
 * the writer's, the rest are computed.
 */

let t: TestClickHouse;
beforeAll(async () => {
  t = await tempClickHouse();
});
afterAll(async () => t?.cleanup());

describe('the stored record', () => {
  it.each(['exchange-a', 'exchange-b'] as const)('of %s is every stored column of the table, in order', async (venue) => {
    const rs = await t.ch.client.query({
      query: `SELECT name, type FROM system.columns WHERE database = {db:String} AND table = {table:String} AND default_kind = '' ORDER BY position`,
      query_params: { db: t.ch.database, table: RAW_TABLE[venue] },
      format: 'JSONEachRow',
    });
    const stored = (await rs.json<{ name: string; type: string }>()).map((c) => [c.name, c.type]);
    expect(STORED_RECORD_COLUMNS[venue].map(([n, ty]) => [n, ty])).toEqual(stored);
  });
});
