import { copyFileSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExchangeAMessage, ExchangeBMessage } from '@booktape/domain';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { MIGRATIONS_DIR, RawEventsRepository, loadMigrations, migrate, type ClickHouse } from './index.ts';
import { exchangeAMessages, exchangeBMessages } from './venue-shapes.test-support.ts';

/**
 * Migration 013 gives every raw record a `source` (docs/rules/imports.md#provenance). On a
 * store written before it, every record must be served exactly as before and read as own
 * capture (''), the sink must keep inserting (it names its columns), and a re-run after a
 * crash at any statement must converge to the same store.
 */

let t: TestClickHouse;
let before013: string;

beforeAll(async () => {
  t = await tempClickHouse();
  before013 = mkdtempSync(path.join(tmpdir(), 'booktape-mig13-'));
  for (const f of readdirSync(MIGRATIONS_DIR)) if (/^0(0\d|1[012])_/.test(f)) copyFileSync(path.join(MIGRATIONS_DIR, f), path.join(before013, f));
});
afterAll(async () => t?.cleanup());

function inDatabase(ch: ClickHouse, database: string): ClickHouse {
  return { ...ch, database, table: (n) => `${database}.${n}` };
}

const A = exchangeAMessages();
const B = exchangeBMessages();
let dbs = 0;

async function oldStore(): Promise<{ ch: ClickHouse; raw: RawEventsRepository }> {
  const ch = inDatabase(t.ch, `mig13_${++dbs}`);
  await ch.client.command({ query: `CREATE DATABASE ${ch.database}` });
  await migrate(ch, before013);
  const raw = new RawEventsRepository(ch);
  const at = <M extends ExchangeAMessage | ExchangeBMessage>(ms: M[]) => ms.map((message, i) => ({ message, position: { partition: 0, offset: String(i) } }));
  await raw.insert('exchange-a', at(A), 'a1');
  await raw.insert('exchange-b', at(B), 'b1');
  return { ch, raw };
}

async function everything(raw: RawEventsRepository): Promise<unknown[]> {
  return [...(await raw.dump('exchange-a')), ...(await raw.dump('exchange-b'))];
}

async function sources(ch: ClickHouse): Promise<string[]> {
  const rs = await ch.client.query({
    query: `SELECT DISTINCT source FROM (SELECT source FROM ${ch.table('raw_exchange_a')} FINAL UNION ALL SELECT source FROM ${ch.table('raw_exchange_b')} FINAL) ORDER BY source`,
    format: 'JSONEachRow',
  });
  return (await rs.json<{ source: string }>()).map((r) => r.source);
}

async function expectMigrated(ch: ClickHouse, raw: RawEventsRepository, before: unknown[]): Promise<void> {
  expect(await everything(raw)).toEqual(before);
  expect(await sources(ch)).toEqual(['']);
  // The sink still inserts (it names its columns); its records are own capture.
  const next = { ...A[1]!, dedup_id: 'after' };
  await raw.insert('exchange-a', [{ message: next, position: { partition: 0, offset: '99' } }], 'after');
  expect(await raw.count('exchange-a')).toBe(A.length + 1);
  expect(await sources(ch)).toEqual(['']);
}

describe('migration 013 (record source)', () => {
  it('keeps a store of the release before as it was, every record own capture', async () => {
    const { ch, raw } = await oldStore();
    const before = await everything(raw);
    expect(before.length).toBe(A.length + B.length);
    expect(await migrate(ch)).toContain(13);
    await expectMigrated(ch, raw, before);
    const kind = await (await ch.client.query({
      query: `SELECT table, type FROM system.columns WHERE database = '${ch.database}' AND name = 'source' ORDER BY table`,
      format: 'JSONEachRow',
    })).json<{ table: string; type: string }>();
    expect(kind).toEqual([
      { table: 'raw_exchange_a', type: 'LowCardinality(String)' },
      { table: 'raw_exchange_b', type: 'LowCardinality(String)' },
    ]);
    expect(await migrate(ch)).toEqual([]);
  });

  it('converges when re-run after a crash at any statement', async () => {
    const probe = inDatabase(t.ch, 'mig13_probe');
    const count = (await loadMigrations(probe)).find((m) => m.version === 13)!.statements.length;
    expect(count).toBe(2);
    for (let k = 0; k <= count; k++) {
      const { ch, raw } = await oldStore();
      const before = await everything(raw);
      const mine = (await loadMigrations(ch)).find((m) => m.version === 13)!.statements;
      for (let s = 0; s < k; s++) await ch.client.command({ query: mine[s]! });
      expect(await migrate(ch), `crash after statement ${k}`).toContain(13);
      await expectMigrated(ch, raw, before);
    }
  }, 300_000);
});
