import fc from 'fast-check';
import { copyFileSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExchangeAMessage, ExchangeBMessage } from '@booktape/domain';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { MIGRATIONS_DIR, RawEventsRepository, loadMigrations, migrate, type ClickHouse } from './index.ts';
import { insertLegacyRows, legacyDump } from './legacy-raw.test-support.ts';
import { exchangeAMessage, exchangeAMessages, exchangeBMessage, exchangeBMessages } from './venue-shapes.test-support.ts';

/**
 * Migration 012 turns the JSON-payload raw tables into typed ones. On a store written by the
 * release before, every record must be served byte for byte as before, in the same order,
 * with the same lineage (the first copy of a duplicate included); rows the typed columns
 * cannot spell keep their bytes in the residue; and a re-run after a crash at any statement,
 * with a row landing in the old table during the copy, must converge to the same store.
 */

let t: TestClickHouse;
let before012: string;

beforeAll(async () => {
  t = await tempClickHouse();
  before012 = mkdtempSync(path.join(tmpdir(), 'booktape-mig12-'));
  for (const f of readdirSync(MIGRATIONS_DIR)) if (/^0(0\d|1[01])_/.test(f)) copyFileSync(path.join(MIGRATIONS_DIR, f), path.join(before012, f));
});
afterAll(async () => t?.cleanup());

function inDatabase(ch: ClickHouse, database: string): ClickHouse {
  return { ...ch, database, table: (n) => `${database}.${n}` };
}

const A = exchangeAMessages();
const B = exchangeBMessages();
// Arbitrary records too (odd spellings among them), distinct and fixed by a seed.
const A_ANY = fc.sample(exchangeAMessage, { numRuns: 60, seed: 12 }).map((m, i) => ({ ...m, dedup_id: `any${i}` }));
const B_ANY = fc.sample(exchangeBMessage, { numRuns: 60, seed: 12 }).map((m, i) => ({ ...m, dedup_id: `any${i}` }));
const MARKET = A[0]!.event.market;

/** A later copy of the first book (another worker, received later): the first copy must stay. */
function laterCopy(m: ExchangeAMessage): ExchangeAMessage {
  return { ...m, worker_id: 9, received_at: new Date(Date.parse(m.received_at) + 60_000).toISOString(), ingest_seq: (BigInt(m.ingest_seq) + 10n ** 12n).toString() };
}

let dbs = 0;

async function oldStore(): Promise<{ ch: ClickHouse; raw: RawEventsRepository }> {
  const ch = inDatabase(t.ch, `mig12_${++dbs}`);
  await ch.client.command({ query: `CREATE DATABASE ${ch.database}` });
  await migrate(ch, before012);
  const at = (ms: Array<ExchangeAMessage | ExchangeBMessage>) => ms.map((message, i) => ({ message, position: { partition: 0, offset: String(i) } }));
  await insertLegacyRows(ch, 'exchange-a', at([...A, ...A_ANY]), 'a1');
  await insertLegacyRows(ch, 'exchange-a', at([laterCopy(A[0]!)]), 'a2');
  await insertLegacyRows(ch, 'exchange-b', at([...B, ...B_ANY]), 'b1');
  return { ch, raw: new RawEventsRepository(ch) };
}

async function everything(raw: RawEventsRepository): Promise<unknown[]> {
  return [...(await raw.dump('exchange-a')), ...(await raw.dump('exchange-b'))];
}

/** `everything` of a store before this migration (its `payload` a stored column). */
async function everythingBefore(ch: ClickHouse): Promise<unknown[]> {
  return [...(await legacyDump(ch, 'exchange-a')), ...(await legacyDump(ch, 'exchange-b'))];
}

async function rows(ch: ClickHouse, q: string): Promise<Array<Record<string, unknown>>> {
  return (await ch.client.query({ query: q, format: 'JSONEachRow' })).json();
}

async function expectMigrated(ch: ClickHouse, raw: RawEventsRepository, before: unknown[]): Promise<void> {
  expect(await everything(raw)).toEqual(before);
  const tables = (await rows(ch, `SELECT name FROM system.tables WHERE database = '${ch.database}' AND name LIKE 'raw_%' ORDER BY name`)).map((r) => r.name);
  expect(tables).toEqual(['raw_exchange_a', 'raw_exchange_b']);
  // 012's ALIAS columns were dropped by 014 (the served record's SQL is in code since).
  const alias = await rows(ch, `SELECT table, name FROM system.columns WHERE database = '${ch.database}' AND table LIKE 'raw_%' AND default_kind = 'ALIAS'`);
  expect(alias).toEqual([]);
  // Every venue shape is typed; only arbitrary records with odd spellings keep a residue.
  const residue = await rows(ch, `SELECT dedup_id FROM ${ch.table('raw_exchange_a')} FINAL WHERE residue != '' UNION ALL SELECT dedup_id FROM ${ch.table('raw_exchange_b')} FINAL WHERE residue != ''`);
  for (const r of residue) expect(String(r.dedup_id)).toMatch(/^any/);
  // The views fire on the new tables: a date stored after the migration is listed.
  const next = { ...A[1]!, dedup_id: 'after', event: { ...A[1]!.event, timestamp: String(Date.UTC(2026, 5, 1)) } };
  await raw.insert('exchange-a', [{ message: next, position: { partition: 0, offset: '99' } }], 'after');
  const dates = await rows(ch, `SELECT toString(event_date) AS d FROM ${ch.table('market_dates')} WHERE venue = 'exchange-a' AND market = '${MARKET}' ORDER BY d`);
  expect(dates.map((r) => r.d)).toContain('2026-06-01');
}

describe('migration 012 (typed raw tables)', () => {
  it('serves a store of the release before byte for byte, in the same order, first copies kept', async () => {
    const { ch, raw } = await oldStore();
    const before = await everythingBefore(ch);
    expect(before.length).toBe(A.length + A_ANY.length + B.length + B_ANY.length);
    expect((before as Array<{ dedup_id: string; worker_id: number }>).find((r) => r.dedup_id === A[0]!.dedup_id)?.worker_id).toBe(3);
    const lineageBefore = await rows(ch, `SELECT dedup_id, toString(inserted_at) AS i, toString(ingest_seq) AS s FROM ${ch.table('raw_exchange_a')} FINAL ORDER BY dedup_id`);
    expect(await migrate(ch)).toContain(12);
    await expectMigrated(ch, raw, before);
    const lineageAfter = await rows(ch, `SELECT dedup_id, toString(inserted_at) AS i, toString(ingest_seq) AS s FROM ${ch.table('raw_exchange_a')} FINAL WHERE dedup_id != 'after' ORDER BY dedup_id`);
    expect(lineageAfter).toEqual(lineageBefore);
    expect(await migrate(ch)).toEqual([]);
  });

  it('converges when re-run after a crash at any statement, with an insert landing in the old table during the copy', async () => {
    const probe = inDatabase(t.ch, 'mig12_probe');
    const statements = (await loadMigrations(probe)).find((m) => m.version === 12)!.statements;
    const firstCopy = statements.findIndex((s) => s.includes('FROM mig12_probe.raw_exchange_a_v12_src'));
    expect(firstCopy).toBeGreaterThan(0);
    const extra = { ...A[2]!, dedup_id: 'during', ingest_seq: (BigInt(A[2]!.ingest_seq) + 5n).toString() };
    // The reference: what a store that never crashed serves, with the row and without it.
    const reference = await oldStore();
    const without = await everythingBefore(reference.ch);
    await insertLegacyRows(reference.ch, 'exchange-a', [{ message: extra, position: { partition: 0, offset: '7' } }], 'during');
    const withLate = await everythingBefore(reference.ch);
    for (let k = 0; k <= statements.length; k++) {
      const { ch, raw } = await oldStore();
      const mine = (await loadMigrations(ch)).find((m) => m.version === 12)!.statements;
      let late = false;
      for (let s = 0; s < k; s++) {
        await ch.client.command({ query: mine[s]! });
        if (s === firstCopy) {
          // Another process stores a row in the old table after the copy read it.
          await insertLegacyRows(ch, 'exchange-a', [{ message: extra, position: { partition: 0, offset: '7' } }], 'during');
          late = true;
        }
      }
      expect(await migrate(ch), `crash after statement ${k}`).toContain(12);
      await expectMigrated(ch, raw, late ? withLate : without);
    }
  }, 900_000);
});
