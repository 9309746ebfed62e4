import { copyFileSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExchangeAMessage, ExchangeBMessage } from '@booktape/domain';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { MIGRATIONS_DIR, RawEventsRepository, loadMigrations, migrate, type ClickHouse } from './index.ts';
import { insertLegacyRows, legacyDump } from './legacy-raw.test-support.ts';

/**
 * Migration 008 rebuilds both raw tables with a first-copy version. It must keep every row
 * of an existing store (and fix duplicates whose earlier copy was not merged away yet),
 * leave the market_dates views working, and converge when re-run after a crash at any
 * statement, even with an insert landing in the old table while its copy ran.
 */

const DAY = Date.UTC(2026, 2, 1);
const MARKET = `0x${'cd'.repeat(32)}`;

function seqAt(ms: number, k: number): string {
  return (BigInt(ms) * 2n ** 23n + BigInt(k)).toString();
}

function aMessage(i: number, ingestMs: number, worker = 1, day = DAY): ExchangeAMessage {
  const ts = day + i;
  return {
    venue: 'exchange-a',
    received_at: new Date(ingestMs).toISOString(),
    worker_id: worker,
    ingest_seq: seqAt(ingestMs, i),
    dedup_id: `d${i}`,
    event: { market: MARKET, asset_id: '1', timestamp: String(ts), hash: `0xh${i}`, event_type: 'price_change', changes: [{ price: '0.5', side: 'BUY', size: String(i + 1) }] },
  };
}

function bMessage(seq: number, ingestMs: number, worker = 1): ExchangeBMessage {
  const ms = DAY + seq;
  return {
    venue: 'exchange-b',
    received_at: new Date(ingestMs).toISOString(),
    worker_id: worker,
    ingest_seq: seqAt(ingestMs, seq),
    dedup_id: `b${seq}`,
    record: { type: 'delta', ticker: 'KXMIG-1', timestamp: new Date(ms).toISOString(), epoch_ms: ms, sid: 1, seq, side: 'yes', price: '0.42', delta: '1' },
  };
}

/** A handle on another database of the same embedded engine (one engine per process). */
function inDatabase(ch: ClickHouse, database: string): ClickHouse {
  return { ...ch, database, table: (n) => `${database}.${n}` };
}

let t: TestClickHouse;
let before008: string;

beforeAll(async () => {
  t = await tempClickHouse();
  before008 = mkdtempSync(path.join(tmpdir(), 'booktape-mig-'));
  for (const f of readdirSync(MIGRATIONS_DIR)) if (/^00[1-7]_/.test(f)) copyFileSync(path.join(MIGRATIONS_DIR, f), path.join(before008, f));
});
afterAll(async () => t?.cleanup());

let dbs = 0;

/**
 * A store of the old schema holding: rows 0..4 of A; row 2 also as a duplicate received
 * later (higher ingest_seq, another worker) that travelled in the SAME Kafka message
 * (offset) and was inserted after it, so the old version kept the duplicate; B rows 1..3.
 */
async function oldStore(): Promise<{ ch: ClickHouse; raw: RawEventsRepository }> {
  const ch = inDatabase(t.ch, `mig8_${++dbs}`);
  await ch.client.command({ query: `CREATE DATABASE ${ch.database}` });
  await migrate(ch, before008);
  const raw = new RawEventsRepository(ch);
  // Rows as the sink wrote them then (JSON payloads; migration 012 made the tables typed).
  await insertLegacyRows(ch, 'exchange-a', [0, 1, 2, 3, 4].map((i) => ({ message: aMessage(i, DAY + 10_000), position: { partition: 0, offset: '5' } })), 'a1');
  await insertLegacyRows(ch, 'exchange-a', [{ message: aMessage(2, DAY + 20_000, 9), position: { partition: 0, offset: '5' } }], 'a2');
  await insertLegacyRows(ch, 'exchange-b', [1, 2, 3].map((s) => ({ message: bMessage(s, DAY + 10_000), position: { partition: 0, offset: String(s) } })), 'b1');
  return { ch, raw };
}

async function rows(ch: ClickHouse, q: string): Promise<Array<Record<string, unknown>>> {
  const rs = await ch.client.query({ query: q, format: 'JSONEachRow' });
  return rs.json();
}

async function expectMigrated(ch: ClickHouse, raw: RawEventsRepository, extra: number[] = []): Promise<void> {
  const a = await raw.dump('exchange-a', MARKET);
  expect(a.map((r) => r.dedup_id)).toEqual([0, 1, 2, 3, 4, ...extra].map((i) => `d${i}`));
  // The first copy of row 2 (received at +10 s, worker 1), not the later duplicate.
  const two = a.find((r) => r.dedup_id === 'd2')!;
  expect(two).toMatchObject({ ingest_seq: seqAt(DAY + 10_000, 2), worker_id: 1, received_at: new Date(DAY + 10_000).toISOString() });
  expect((await raw.dump('exchange-b', 'KXMIG-1')).map((r) => r.seq)).toEqual([1, 2, 3]);
  // The new version expression is in place, the old tables and helpers are gone.
  const tables = (await rows(ch, `SELECT name FROM system.tables WHERE database = '${ch.database}' AND name LIKE 'raw_%' ORDER BY name`)).map((r) => r.name);
  expect(tables).toEqual(['raw_exchange_a', 'raw_exchange_b']);
  const versions = await rows(ch, `SELECT table, default_expression AS e FROM system.columns WHERE database = '${ch.database}' AND name = 'row_version' ORDER BY table`);
  for (const v of versions) expect(String(v.e)).toContain('ingest_seq');
  // market_dates was kept, its views fire on the new tables, the checks column exists.
  const raw2 = new RawEventsRepository(ch);
  await raw2.insert('exchange-a', [{ message: aMessage(0, DAY + 30_000, 1, DAY + 5 * 86_400_000), position: { partition: 0, offset: '100' } }], 'later');
  const dates = (await rows(ch, `SELECT DISTINCT venue, toString(event_date) AS d FROM ${ch.table('market_dates')} ORDER BY venue, d`)).map((r) => `${r.venue} ${r.d}`);
  expect(dates).toEqual(['exchange-a 2026-03-01', 'exchange-a 2026-03-06', 'exchange-b 2026-03-01']);
  const cols = (await rows(ch, `SELECT name FROM system.columns WHERE database = '${ch.database}' AND table = 'summary_days' AND name = 'checks'`)).length;
  expect(cols).toBe(1);
}

describe('migration 008 (first-copy raw tables)', () => {
  it('on an old store, keeps every row, keeps the first copy of an unmerged duplicate, keeps market_dates current', async () => {
    const { ch, raw } = await oldStore();
    // The old version kept the LAST inserted copy: the bug this migration fixes.
    expect((await legacyDump(ch, 'exchange-a', MARKET)).find((r) => r.dedup_id === 'd2')?.worker_id).toBe(9);
    const insertedBefore = await rows(ch, `SELECT dedup_id, toString(inserted_at) AS i FROM ${ch.table('raw_exchange_a')} FINAL ORDER BY dedup_id`);
    expect(await migrate(ch)).toContain(8);
    await expectMigrated(ch, raw);
    // Lineage (inserted_at drives the rollup sweep) is carried over.
    const insertedAfter = await rows(ch, `SELECT dedup_id, toString(inserted_at) AS i FROM ${ch.table('raw_exchange_a')} FINAL WHERE event_date = '2026-03-01' ORDER BY dedup_id`);
    expect(insertedAfter.filter((r) => r.dedup_id !== 'd2')).toEqual(insertedBefore.filter((r) => r.dedup_id !== 'd2'));
    expect(await migrate(ch)).toEqual([]);
  });

  it('converges when re-run after a crash at any statement, with an insert landing in the old table during the copy', async () => {
    const probe = inDatabase(t.ch, 'mig8_probe');
    const statements = (await loadMigrations(probe)).find((m) => m.version === 8)!.statements;
    const firstCopy = statements.findIndex((s) => s.includes('FROM mig8_probe.raw_exchange_a_v8_src'));
    expect(firstCopy).toBeGreaterThan(0);
    for (let k = 0; k <= statements.length; k++) {
      const { ch, raw } = await oldStore();
      const mine = (await loadMigrations(ch)).find((m) => m.version === 8)!.statements;
      let late = false;
      for (let s = 0; s < k; s++) {
        await ch.client.command({ query: mine[s]! });
        if (s === firstCopy) {
          // Another process stores a row in the old table after the copy read it.
          await insertLegacyRows(ch, 'exchange-a', [{ message: aMessage(7, DAY + 40_000), position: { partition: 0, offset: '7' } }], 'during');
          late = true;
        }
      }
      // The crash: the migration is not recorded, so the next start runs all of it again.
      expect(await migrate(ch), `crash after statement ${k}`).toContain(8);
      await expectMigrated(ch, raw, late ? [7] : []);
    }
  }, 600_000);

  it('on an empty store, creates working tables', async () => {
    const raw = new RawEventsRepository(t.ch);
    expect(await raw.count('exchange-a')).toBe(0);
    const versions = await rows(t.ch, `SELECT default_expression AS e FROM system.columns WHERE database = '${t.ch.database}' AND name = 'row_version'`);
    expect(versions.map((v) => String(v.e).includes('ingest_seq'))).toEqual([true, true]);
  });
});
