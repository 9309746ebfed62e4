import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kafka } from 'kafkajs';
import type { CaptureGap } from '@booktape/domain';
import { parseEnv, silentLogger } from '@booktape/config';
import { BatchingProducer, createKafka, ensureTopics, topicNames } from '@booktape/messaging';
import { openClickHouse, migrate, RawEventsRepository, CaptureGapsRepository, type ClickHouse } from '@booktape/storage';
import { startSimulator, type Simulator } from '@booktape/simulator';
import { readCaptureFile } from '@booktape/venues';
import { requireEnv, tempClickHouse, uniqueId, waitFor, type TestClickHouse } from '@booktape/testkit';
import { ingestorConfig, ingestorEnvSchema } from './config.ts';
import { createIngestor, type Ingestor } from './ingestor.ts';
import { CapturePipeline } from './capture-pipeline.ts';
import { replayFiles, waitUntilStored } from './replay/replay.ts';
import { importCaptureFiles } from './replay/import-capture.ts';
import { createSink } from './sink/sink.ts';

const log = silentLogger();

/**
 * An independent count of the records a set of frames must produce, written straight from
 * docs/rules/venue-frames.md and not from the normalisers: A: one per book, one per asset of a new
 * price_change, one per old price_change or other event; B: one per snapshot or delta.
 */
function expectedFromFrames(frames: Array<{ venue: string; frame: unknown }>) {
  const a = { records: 0, hashes: new Set<string>() };
  const b = { snapshots: 0, deltas: 0 };
  for (const { venue, frame } of frames) {
    if (typeof frame !== 'object' || frame === null) continue; // PONG, garbage text
    if (venue === 'exchange-a') {
      const events = Array.isArray(frame) ? frame : [frame];
      if (events.some((e) => typeof e !== 'object' || e === null || typeof (e as { market?: unknown }).market !== 'string')) continue; // garbage
      for (const e of events as Array<Record<string, unknown>>) {
        if (e.event_type === 'price_change' && Array.isArray(e.price_changes)) {
          const assets = new Map<string, string>();
          for (const pc of e.price_changes as Array<{ asset_id: string; hash: string }>) if (!assets.has(pc.asset_id)) assets.set(pc.asset_id, pc.hash);
          a.records += assets.size;
          for (const h of assets.values()) a.hashes.add(h);
        } else {
          a.records += 1;
          if (e.event_type === 'book') a.hashes.add(String(e.hash));
        }
      }
    } else {
      const t = (frame as { type?: unknown }).type;
      if (t === 'orderbook_snapshot') b.snapshots += 1;
      if (t === 'orderbook_delta') b.deltas += 1;
    }
  }
  return { a, b };
}

describe('simulator → capture → Kafka → sink → ClickHouse', () => {
  let t: TestClickHouse;
  let sim: Simulator;
  let kafka: Kafka;
  let ingestor: Ingestor;
  let captureDir: string;
  const prefix = `${uniqueId('pipe')}.`;
  const groupId = uniqueId('pipe-g');

  beforeAll(async () => {
    t = await tempClickHouse();
    captureDir = mkdtempSync(path.join(tmpdir(), 'booktape-capture-'));
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    sim = await startSimulator({
      eventsPerSecond: 1500,
      seed: 7,
      markets: { exchangeA: 4, exchangeB: 3 },
      kalshiKeyId: 'k1',
      kalshiPublicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    });
    const env = {
      KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'),
      KAFKA_TOPIC_PREFIX: prefix,
      KAFKA_PARTITIONS: '4',
      SINK_GROUP_ID: groupId,
      EXCHANGE_A_WS_URL: sim.urls.exchangeA,
      EXCHANGE_A_GAMMA_URL: sim.urls.gamma,
      EXCHANGE_B_WS_URL: sim.urls.exchangeB,
      EXCHANGE_B_TICKERS: sim.markets.exchangeB.map((m) => m.ticker).join(','),
      EXCHANGE_B_API_KEY_ID: 'k1',
      EXCHANGE_B_PRIVATE_KEY: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      CAPTURE_FILE_DIR: captureDir,
      CAPTURE_FILE_GZIP: 'true',
      WORKER_ID: '3',
    };
    const config = ingestorConfig(parseEnv(ingestorEnvSchema, env), env);
    kafka = createKafka({ brokers: config.platform.kafka.brokers, clientId: 'pipe-test' }, log);
    ingestor = createIngestor({ config, kafka, ch: t.ch, log });
    await ingestor.start();
  });

  afterAll(async () => {
    await ingestor?.stop();
    await sim?.close();
    await t?.cleanup();
    rmSync(captureDir, { recursive: true, force: true });
  });

  it('stores every frame the venues sent, once, including across reconnects, seq gaps and garbage', async () => {
    const pipeline = ingestor.pipeline!;
    await waitFor('both venues flowing', () => pipeline.counters['exchange-a'].records > 200 && pipeline.counters['exchange-b'].records > 100, 30_000);

    // Quiesce: with the venues silent, capture has received every frame they sent.
    sim.setRate(0);
    await waitFor('capture caught up with the simulator', () => {
      const s = sim.stats();
      return s.exchangeA.frames === pipeline.counters['exchange-a'].frames && s.exchangeB.frames === pipeline.counters['exchange-b'].frames;
    }, 10_000);

    // Trouble: garbage, a seq gap, dropped sockets, then more traffic.
    sim.injectGarbage();
    sim.setRate(1500);
    await waitFor('deltas after resuming', () => pipeline.counters['exchange-b'].records > 300, 20_000);
    expect(sim.injectSeqGap()).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 500));
    expect(sim.dropConnections()).toBeGreaterThan(0);
    const reconnectsDone = () => sim.stats().exchangeA.connectionsTotal >= 2 && sim.stats().exchangeB.connectionsTotal >= 2;
    await waitFor('feeds reconnected', reconnectsDone, 30_000);
    await new Promise((r) => setTimeout(r, 1500));

    await ingestor.stopCapture();
    await waitUntilStored(kafka, ingestor.topics, groupId, { timeoutMs: 60_000 });

    // What capture received is in the capture files, frame by frame.
    const files = readdirSync(captureDir).sort().map((f) => path.join(captureDir, f));
    const frames: Array<{ venue: string; frame: unknown }> = [];
    let boundaries = 0;
    const gapLines: CaptureGap[] = [];
    for (const f of files) {
      for await (const e of readCaptureFile(f)) {
        if (!('line' in e)) continue;
        if (e.line.boundary !== undefined) boundaries += 1; // connection boundaries: not frames
        else if (e.line.gap !== undefined) gapLines.push(e.line.gap); // capture gaps: not frames
        else frames.push({ venue: e.line.venue, frame: e.line.frame });
      }
    }
    // Each venue connected twice (the drop above) and disconnected at least once.
    expect(boundaries).toBeGreaterThanOrEqual(6);
    // The drop's gap is in the files too (opened, then closed), so a replay reproduces it.
    for (const venue of ['exchange-a', 'exchange-b'] as const) {
      expect(gapLines.some((g) => g.venue === venue && g.ended_at !== null)).toBe(true);
    }
    expect(frames.length).toBe(pipeline.counters['exchange-a'].frames + pipeline.counters['exchange-b'].frames);

    const expected = expectedFromFrames(frames);
    const repo = new RawEventsRepository(t.ch);
    const storedA = await repo.dump('exchange-a');
    const storedB = await repo.dump('exchange-b');
    expect(storedA.length).toBe(expected.a.records);
    expect(new Set(storedA.map((r) => r.dedup_id)).size).toBe(storedA.length);
    const storedHashes = new Set(storedA.map((r) => String(r.hash)));
    for (const h of expected.a.hashes) expect(storedHashes.has(h)).toBe(true);
    // A fresh book after every reconnect: at least two books per token.
    const books = storedA.filter((r) => r.event_type === 'book').length;
    expect(books).toBeGreaterThanOrEqual(2 * sim.markets.exchangeA.length * 2);

    const byType = (type: string) => storedB.filter((r) => r.type === type).length;
    expect(byType('snapshot')).toBe(expected.b.snapshots);
    expect(byType('delta')).toBe(expected.b.deltas);
    expect(byType('gap')).toBeGreaterThanOrEqual(sim.markets.exchangeB.length);
    expect(storedA.every((r) => r.worker_id === 3)).toBe(true);

    expect(pipeline.counters['exchange-a'].deadLetters + pipeline.counters['exchange-b'].deadLetters).toBeGreaterThan(0);
    const gaps = await new CaptureGapsRepository(t.ch).list();
    expect(gaps.some((g) => g.venue === 'exchange-a' && g.ended_at !== null)).toBe(true);
    expect(gaps.some((g) => g.venue === 'exchange-b')).toBe(true);
  });

  it('replaying the capture files reproduces the stored data exactly, and a second replay changes nothing', async () => {
    const files = readdirSync(captureDir).sort().map((f) => path.join(captureDir, f));
    const live = { a: await new RawEventsRepository(t.ch).dump('exchange-a'), b: await new RawEventsRepository(t.ch).dump('exchange-b') };

    // A second database in the same engine, fed only by replay through its own topics.
    const replayCh: ClickHouse = await openClickHouse({ database: 'booktape_replay', embeddedPath: t.dir });
    await migrate(replayCh);
    const rPrefix = `${uniqueId('replay')}.`;
    const rTopics = topicNames(rPrefix);
    await ensureTopics(kafka, rTopics, 4);
    const rGroup = uniqueId('replay-g');
    const sink = createSink({ kafka, topics: rTopics, ch: replayCh, log, groupId: rGroup });
    await sink.start();
    const repo = new RawEventsRepository(replayCh);
    try {
      const replayOnce = async () => {
        const producer = new BatchingProducer(kafka, log);
        await producer.connect();
        const pipeline = new CapturePipeline({ producer, topics: rTopics, workerId: 3, log });
        const summary = await replayFiles(pipeline, files);
        await producer.disconnect();
        await waitUntilStored(kafka, rTopics, rGroup, { timeoutMs: 60_000 });
        return summary;
      };
      const first = await replayOnce();
      expect(first.badLines).toEqual([]);
      const afterFirst = { a: await repo.dump('exchange-a'), b: await repo.dump('exchange-b') };
      expect(afterFirst).toEqual(live);

      await replayOnce();
      const afterSecond = { a: await repo.dump('exchange-a'), b: await repo.dump('exchange-b') };
      expect(afterSecond).toEqual(afterFirst);
      const rs = await replayCh.client.query({ query: `SELECT count() AS n FROM ${replayCh.table('raw_exchange_a')} FINAL`, format: 'JSONEachRow' });
      expect(Number((await rs.json<{ n: string }>())[0]!.n)).toBe(live.a.length);
    } finally {
      await sink.stop();
    }
  });

  it('importing the capture files (booktape import) stores what live capture stored, without Kafka; importing them again changes nothing', async () => {
    const files = readdirSync(captureDir).sort().map((f) => path.join(captureDir, f));
    const live = { a: await new RawEventsRepository(t.ch).dump('exchange-a'), b: await new RawEventsRepository(t.ch).dump('exchange-b') };
    const liveGaps = await new CaptureGapsRepository(t.ch).list();
    // A third database in the same engine, fed only by the import.
    const importCh: ClickHouse = await openClickHouse({ database: 'booktape_capture_import', embeddedPath: t.dir });
    await migrate(importCh);
    const repo = new RawEventsRepository(importCh);
    const first = await importCaptureFiles(importCh, files, { workerId: 3, log });
    expect(first.inserted).toBe(live.a.length + live.b.length);
    expect(first.skipped).toBeGreaterThan(0); // the garbage frames live capture refused too
    expect({ a: await repo.dump('exchange-a'), b: await repo.dump('exchange-b') }).toEqual(live);
    expect(await new CaptureGapsRepository(importCh).list()).toEqual(liveGaps);
    // The records keep their capture lineage but were never in Kafka.
    const rs = await importCh.client.query({ query: `SELECT DISTINCT kafka_partition, kafka_offset, source FROM ${importCh.table('raw_exchange_a')}`, format: 'JSONEachRow' });
    expect(await rs.json()).toEqual([{ kafka_partition: -1, kafka_offset: '-1', source: '' }]);

    const again = await importCaptureFiles(importCh, files, { workerId: 3, log });
    expect(again).toMatchObject({ inserted: 0, alreadyStored: first.inserted });
    expect({ a: await repo.dump('exchange-a'), b: await repo.dump('exchange-b') }).toEqual(live);
  });
});
