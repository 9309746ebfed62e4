/**
 * Bytes on disk of the raw tables, per column, against the capture's gzip -6, and what other
 * layouts of the same rows would cost: the deduplication key as a 64-bit digest instead of
 * today's SHA-1 text, and 1,024-row granules instead of 8,192. No Kafka: the capture's
 * binary values (through the capture pipeline, as `booktape replay` sends them) are decoded
 * and inserted as the sink inserts them, into a fresh embedded store, then merged.
 *
 *   node --import tsx benchmarks/disk-columns.ts [FRAMES]     (default 200,000; seed 10)
 *
 * A variant table is `CREATE TABLE … AS` the raw table with the change applied, filled by
 * `INSERT … SELECT` of every row and merged the same way, so the only difference is the
 * change (the digest is cityHash64 of today's id: 8 bytes of entropy per row, as any
 * 64-bit digest of the identity would be).
 */
import { createReadStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline as streamPipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { silentLogger } from '@booktape/config';
import type { RawMessage, Venue } from '@booktape/domain';
import { decodeRawMessages, topicNames, type BatchingProducer } from '@booktape/messaging';
import { migrate, openClickHouse, RawEventsRepository, type StoredMessage } from '@booktape/storage';
import { CapturePipeline } from '../apps/ingestor/src/capture-pipeline.ts';
import { replayFiles } from '../apps/ingestor/src/replay/replay.ts';
import { writeCapture } from './capture-gen.ts';

const frames = Number(process.argv[2] ?? 200_000);
if (!Number.isSafeInteger(frames) || frames < 1000) throw new Error(`FRAMES: expected an integer ≥ 1000, got ${process.argv[2]}`);
const dir = mkdtempSync(path.join(tmpdir(), 'booktape-disk-columns-'));
try {
  const file = path.join(dir, 'capture.ndjson');
  await writeCapture(file, { frames, marketsA: 30, tickersB: 20, seed: 10, startMs: Date.parse('2026-03-01T08:00:00Z') });
  let gzip = 0;
  await streamPipeline(createReadStream(file), createGzip({ level: 6 }), new Writable({ write: (c: Buffer, _e, cb) => ((gzip += c.length), cb()) }));

  const topics = topicNames('bench.');
  const venueOf = new Map(Object.entries(topics.raw).map(([v, t]) => [t, v as Venue]));
  const rows: Record<Venue, StoredMessage[]> = { 'exchange-a': [], 'exchange-b': [] };
  let offset = 0;
  const producer = {
    buffered: 0,
    async send(m: { topic: string; value: string | Buffer }) {
      const venue = venueOf.get(m.topic);
      if (!venue || !Buffer.isBuffer(m.value)) return;
      const d = decodeRawMessages(venue, m.value);
      if (!d.ok) throw new Error(d.reason);
      for (const message of d.messages as RawMessage[]) rows[venue].push({ message, position: { partition: 0, offset: String(offset++) } });
    },
  } as unknown as BatchingProducer;
  await replayFiles(new CapturePipeline({ producer, topics, workerId: 1, log: silentLogger() }), [file]);

  const ch = await openClickHouse({ database: 'booktape_disk', embeddedPath: path.join(dir, 'store') });
  await migrate(ch);
  const repo = new RawEventsRepository(ch);
  for (const venue of Object.keys(rows) as Venue[]) {
    const list = rows[venue];
    for (let i = 0; i < list.length; i += 10_000) await repo.insert(venue, list.slice(i, i + 10_000), `disk-${venue}-${i}`);
  }
  const events = rows['exchange-a'].length + rows['exchange-b'].length;
  const q = async <T>(query: string): Promise<T[]> => (await ch.client.query({ query, format: 'JSONEachRow' })).json<T>();
  const tables = ['raw_exchange_a', 'raw_exchange_b'];
  const disk = async (names: string[]) => {
    for (const t of names) await ch.client.command({ query: `OPTIMIZE TABLE ${ch.table(t)} FINAL` });
    const [r] = await q<{ n: string }>(`SELECT sum(bytes_on_disk) AS n FROM system.parts WHERE active AND database = '${ch.database}' AND table IN (${names.map((t) => `'${t}'`).join(', ')})`);
    return Number(r!.n);
  };
  const base = await disk(tables);
  const byColumn = await q<{ name: string; n: string }>(
    `SELECT name, sum(data_compressed_bytes) AS n FROM system.columns WHERE database = '${ch.database}' AND table IN ('raw_exchange_a', 'raw_exchange_b') GROUP BY name ORDER BY sum(data_compressed_bytes) DESC`,
  );

  // A variant: each raw table recreated with `ddl` applied to its CREATE statement, all rows copied.
  const variant = async (suffix: string, rewrite: (create: string) => string, select: string) => {
    const names: string[] = [];
    for (const t of tables) {
      const [r] = await q<{ s: string }>(`SELECT create_table_query AS s FROM system.tables WHERE database = '${ch.database}' AND name = '${t}'`);
      const create = rewrite(r!.s.replace(`${ch.table(t)} `, `${ch.table(`${t}_${suffix}`)} `));
      await ch.client.command({ query: create });
      await ch.client.command({ query: `INSERT INTO ${ch.table(`${t}_${suffix}`)} SELECT ${select} FROM ${ch.table(t)}` });
      names.push(`${t}_${suffix}`);
    }
    return disk(names);
  };
  const star = `* REPLACE (cityHash64(dedup_id) AS dedup_id)`;
  const digest = await variant('u64', (s) => s.replace(/`?dedup_id`? String/, 'dedup_id UInt64'), star);
  const granules = await variant('g1024', (s) => s.replace(/index_granularity = \d+/, 'index_granularity = 1024'), '*');
  await ch.close();

  const per = (n: number) => Math.round((n / events) * 10) / 10;
  const ratio = (n: number) => Math.round((n / gzip) * 1000) / 1000;
  console.log(
    JSON.stringify({
      frames,
      events,
      capture_gzip6_bytes: gzip,
      gzip6_bytes_per_event: per(gzip),
      today: { bytes: base, per_event: per(base), to_gzip: ratio(base) },
      dedup_id_as_uint64: { bytes: digest, per_event: per(digest), to_gzip: ratio(digest), vs_today: Math.round((digest / base) * 1000) / 1000 },
      granules_1024: { bytes: granules, per_event: per(granules), to_gzip: ratio(granules), vs_today: Math.round((granules / base) * 1000) / 1000 },
      per_event_by_column: Object.fromEntries(byColumn.map((r) => [r.name, per(Number(r.n))])),
    }),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
