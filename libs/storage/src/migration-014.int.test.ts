import fc from 'fast-check';
import { copyFileSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExchangeAMessage, ExchangeBMessage, Venue } from '@booktape/domain';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { MIGRATIONS_DIR, MarketDataRepository, RawEventsRepository, SERVED_RECORD_SQL, closeStreamSessions, loadMigrations, migrate, type ByteStream, type ClickHouse } from './index.ts';
import { exchangeAMessage, exchangeAMessages, exchangeBMessage, exchangeBMessages } from './venue-shapes.test-support.ts';
import { VENUE_STORAGE } from './venue-storage.ts';

/**
 * Migration 014 drops the raw tables' ALIAS columns `payload` and `rebuilt`; the readers
 * select the same expression from code (SERVED_RECORD_SQL). On a store written before it,
 * every record must be served byte for byte as the `payload` column served it (records
 * with a residue among them), every raw page must be the same bytes, and a re-run after a
 * crash at any statement must converge to the same store.
 */

let t: TestClickHouse;
let before014: string;

beforeAll(async () => {
  t = await tempClickHouse();
  before014 = mkdtempSync(path.join(tmpdir(), 'booktape-mig14-'));
  for (const f of readdirSync(MIGRATIONS_DIR)) if (/^0(0\d|1[0-3])_/.test(f)) copyFileSync(path.join(MIGRATIONS_DIR, f), path.join(before014, f));
});
afterAll(async () => t?.cleanup());

function inDatabase(ch: ClickHouse, database: string): ClickHouse {
  return { ...ch, database, table: (n) => `${database}.${n}` };
}

const A = exchangeAMessages();
const B = exchangeBMessages();
// Arbitrary records too (odd spellings among them: rows with a residue), fixed by a seed.
const A_ANY = fc.sample(exchangeAMessage, { numRuns: 60, seed: 14 }).map((m, i) => ({ ...m, dedup_id: `any${i}` }));
const B_ANY = fc.sample(exchangeBMessage, { numRuns: 60, seed: 14 }).map((m, i) => ({ ...m, dedup_id: `any${i}` }));
let dbs = 0;

async function rows<T = Record<string, unknown>>(ch: ClickHouse, query: string): Promise<T[]> {
  return (await ch.client.query({ query, format: 'JSONEachRow' })).json<T>();
}

async function oldStore(): Promise<ClickHouse> {
  const ch = inDatabase(t.ch, `mig14_${++dbs}`);
  await ch.client.command({ query: `CREATE DATABASE ${ch.database}` });
  await migrate(ch, before014);
  const raw = new RawEventsRepository(ch);
  const at = <M extends ExchangeAMessage | ExchangeBMessage>(ms: M[]) => ms.map((message, i) => ({ message, position: { partition: 0, offset: String(i) } }));
  await raw.insert('exchange-a', at([...A, ...A_ANY]), 'a1');
  await raw.insert('exchange-b', at([...B, ...B_ANY]), 'b1');
  return ch;
}

/** Every row's served record, by the expression given, in serving order. */
async function records(ch: ClickHouse, venue: Venue, record: string): Promise<string[]> {
  const s = VENUE_STORAGE[venue];
  const got = await rows<{ r: string }>(ch, `SELECT ${record} AS r FROM ${ch.table(s.table)} FINAL ORDER BY ${s.market}, event_ts, ingest_seq, dedup_id`);
  return got.map((x) => x.r);
}

async function text(s: ByteStream): Promise<string> {
  let out = '';
  for await (const c of s) out += c.toString('utf8');
  return out;
}

/** Every raw page of the store (each market's each date, whole), plain and with every `include`. */
async function pages(ch: ClickHouse): Promise<string[]> {
  const repo = new MarketDataRepository(ch);
  const out: string[] = [];
  try {
    for (const venue of ['exchange-a', 'exchange-b'] as const) {
      const s = VENUE_STORAGE[venue];
      const days = await rows<{ m: string; d: string }>(ch, `SELECT DISTINCT ${s.market} AS m, toString(event_date) AS d FROM ${ch.table(s.table)} ORDER BY m, d`);
      expect(days.length).toBeGreaterThan(0);
      for (const { m, d } of days) {
        out.push(await text(repo.streamByDate(venue, m, d, 0, 100_000)));
        out.push(await text(repo.streamByDate(venue, m, d, 0, 100_000, null, undefined, undefined, { source: true, record: true })));
      }
    }
  } finally {
    closeStreamSessions(ch);
  }
  return out;
}

async function aliases(ch: ClickHouse): Promise<string[]> {
  const got = await rows<{ c: string }>(ch, `SELECT concat(table, '.', name) AS c FROM system.columns WHERE database = '${ch.database}' AND table LIKE 'raw_%' AND default_kind = 'ALIAS' ORDER BY c`);
  return got.map((r) => r.c);
}

describe('migration 014 (the served record in code)', () => {
  it('serves a store of the release before byte for byte: every record, every raw page', async () => {
    const ch = await oldStore();
    expect(await aliases(ch)).toEqual(['raw_exchange_a.payload', 'raw_exchange_a.rebuilt', 'raw_exchange_b.payload', 'raw_exchange_b.rebuilt']);
    const columnA = await records(ch, 'exchange-a', 'payload');
    const columnB = await records(ch, 'exchange-b', 'payload');
    expect(columnA.length).toBe(A.length + A_ANY.length);
    expect(columnB.length).toBe(B.length + B_ANY.length);
    // Some of them keep a residue (the check would be weaker without).
    const residues = await rows(ch, `SELECT 1 FROM ${ch.table('raw_exchange_a')} WHERE residue != '' UNION ALL SELECT 1 FROM ${ch.table('raw_exchange_b')} WHERE residue != ''`);
    expect(residues.length).toBeGreaterThan(0);
    const pagesBefore = await pages(ch);

    expect(await migrate(ch)).toContain(14);
    expect(await aliases(ch)).toEqual([]);
    expect(await records(ch, 'exchange-a', SERVED_RECORD_SQL['exchange-a'])).toEqual(columnA);
    expect(await records(ch, 'exchange-b', SERVED_RECORD_SQL['exchange-b'])).toEqual(columnB);
    expect(await pages(ch)).toEqual(pagesBefore);
    // The sink still inserts, and its record is served.
    await new RawEventsRepository(ch).insert('exchange-a', [{ message: { ...A[1]!, dedup_id: 'after' }, position: { partition: 0, offset: '99' } }], 'after');
    expect((await records(ch, 'exchange-a', SERVED_RECORD_SQL['exchange-a'])).length).toBe(columnA.length + 1);
    expect(await migrate(ch)).toEqual([]);
  });

  it('converges when re-run after a crash at any statement', async () => {
    const probe = inDatabase(t.ch, 'mig14_probe');
    const count = (await loadMigrations(probe)).find((m) => m.version === 14)!.statements.length;
    expect(count).toBe(4);
    for (let k = 0; k <= count; k++) {
      const ch = await oldStore();
      const before = [await records(ch, 'exchange-a', 'payload'), await records(ch, 'exchange-b', 'payload')];
      const mine = (await loadMigrations(ch)).find((m) => m.version === 14)!.statements;
      for (let s = 0; s < k; s++) await ch.client.command({ query: mine[s]! });
      expect(await migrate(ch), `crash after statement ${k}`).toContain(14);
      expect(await aliases(ch)).toEqual([]);
      expect([await records(ch, 'exchange-a', SERVED_RECORD_SQL['exchange-a']), await records(ch, 'exchange-b', SERVED_RECORD_SQL['exchange-b'])]).toEqual(before);
    }
  }, 300_000);
});
