import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@booktape/config';
import type { ExchangeBRecord, RawMessage } from '@booktape/domain';
import { decodeRawMessages, isBinaryValue, topicNames, type BatchingProducer } from '@booktape/messaging';
import { CaptureFileWriter } from '@booktape/venues';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CapturePipeline } from './capture-pipeline.ts';
import { replayFiles } from './replay/replay.ts';

/**
 * Unit tests of the pipeline's exchange B sequence handling across connection boundaries,
 * live and replayed. Kafka is not the subject here: a recording producer stands in for it
 * (the integration tests run the real one).
 */

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'booktape-pipeline-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function pipeline(files?: CaptureFileWriter): { p: CapturePipeline; records: () => ExchangeBRecord[] } {
  const sent: Buffer[] = [];
  const producer = { buffered: 0, send: async (m: { topic: string; value: string | Buffer }) => void (m.topic === topics.raw['exchange-b'] && sent.push(Buffer.from(m.value))) };
  const p = new CapturePipeline({
    producer: producer as unknown as BatchingProducer,
    topics,
    workerId: 1,
    log: silentLogger(),
    ...(files ? { files: { 'exchange-b': files } } : {}),
  });
  return { p, records: () => sent.flatMap((v) => decoded(v).map((m) => (m as { record: ExchangeBRecord }).record)) };
}

/** A raw value as the sink reads it: a value it would refuse fails the test. */
function decoded(v: Buffer): RawMessage[] {
  const d = decodeRawMessages('exchange-b', v);
  if (!d.ok) throw new Error(d.reason);
  return d.messages;
}

const topics = topicNames('t.');
const T1 = 'KXBTCD-26FEB14-T100000';
let clock = Date.UTC(2026, 1, 14, 14, 0, 0);
const at = (): Date => new Date((clock += 5));
const subscribed = (sid: number) => ({ type: 'subscribed', id: 1, msg: { channel: 'orderbook_delta', sid } });
const snap = (sid: number, seq: number) => ({ type: 'orderbook_snapshot', sid, seq, msg: { market_ticker: T1, yes_dollars_fp: [['0.4100', '20.00']] } });
const delta = (sid: number, seq: number) => ({ type: 'orderbook_delta', sid, seq, msg: { market_ticker: T1, price_dollars: '0.4100', delta_fp: '-1.00', side: 'yes', ts_ms: 1771077600000 } });
const line = (frame: object) => JSON.stringify({ venue: 'exchange-b', received_at: at().toISOString(), frame });
const boundary = (kind: 'connect' | 'disconnect', id: string) => JSON.stringify({ venue: 'exchange-b', received_at: at().toISOString(), boundary: { kind, connection_id: id } });
const types = (rs: ExchangeBRecord[]) => rs.map((r) => `${r.type}:${r.seq}`);

describe('CapturePipeline: exchange B connection boundaries', () => {
  it('live: writes boundary lines between the frames, and a connect restarts seq tracking', async () => {
    const writer = new CaptureFileWriter({ dir, prefix: 'exchange-b-w1' });
    const { p, records } = pipeline(writer);
    p.handleBoundary('exchange-b', { kind: 'connect', connection_id: 'exchange-b-0#1' }, at());
    await p.handleFrame('exchange-b', JSON.stringify(snap(1, 1)), at());
    await p.handleFrame('exchange-b', JSON.stringify(delta(1, 2)), at());
    p.handleBoundary('exchange-b', { kind: 'disconnect', connection_id: 'exchange-b-0#1', reason: 'idle timeout' }, at());
    p.handleBoundary('exchange-b', { kind: 'connect', connection_id: 'exchange-b-0#2' }, at());
    // The new connection reuses sid 1 from seq 1, here without a `subscribed` in between.
    await p.handleFrame('exchange-b', JSON.stringify(snap(1, 1)), at());
    await writer.close();
    expect(types(records())).toEqual(['snapshot:1', 'delta:2', 'snapshot:1']);
    expect(p.counters['exchange-b'].frames).toBe(3);
    const text = (await readFile(writer.files[0]!, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(text.map((l) => ('boundary' in l ? (l['boundary'] as { kind: string }).kind : 'frame'))).toEqual(['connect', 'frame', 'frame', 'disconnect', 'connect', 'frame']);
    expect(text[3]).toMatchObject({ boundary: { kind: 'disconnect', connection_id: 'exchange-b-0#1', reason: 'idle timeout' } });
  });

  it('replay: resets at each connect line, counts no boundary as a frame, and yields what live yielded', async () => {
    const f = join(dir, 'a.ndjson');
    await writeFile(
      f,
      [boundary('connect', 'b#1'), line(subscribed(1)), line(snap(1, 1)), line(delta(1, 2)), boundary('disconnect', 'b#1'), boundary('connect', 'b#2'), line(snap(1, 1)), line(delta(1, 2))].join('\n'),
    );
    const { p, records } = pipeline();
    const summary = await replayFiles(p, [f]);
    expect(summary).toMatchObject({ frames: 5, records: 4, controls: 1, deadLetters: 0, badLines: [] });
    expect(types(records())).toEqual(['snapshot:1', 'delta:2', 'snapshot:1', 'delta:2']);
  });

  it('replay: a file that starts mid-session reports one gap per ticker whose first message is a delta', async () => {
    const f = join(dir, 'mid.ndjson');
    await writeFile(f, [line(delta(4, 80_200)), line(delta(4, 80_201)), line({ type: 'ok', id: 5, sid: 4, seq: 80_202, msg: {} }), line(delta(4, 80_203))].join('\n'));
    const { p, records } = pipeline();
    await replayFiles(p, [f]);
    const rs = records();
    expect(types(rs)).toEqual(['gap:80200', 'delta:80200', 'delta:80201', 'delta:80203']);
    expect(rs[0]).not.toHaveProperty('expected_seq');
  });

  it('replay: resets at the start of each file, except for the rotated continuation of an open connection', async () => {
    const first = join(dir, 'f1.ndjson');
    const rotated = join(dir, 'f2.ndjson');
    const unrelated = join(dir, 'f3.ndjson');
    await writeFile(first, [boundary('connect', 'b#1'), line(subscribed(1)), line(snap(1, 1)), line(delta(1, 2))].join('\n'));
    await writeFile(rotated, [line(delta(1, 3)), line(delta(1, 4)), boundary('disconnect', 'b#1')].join('\n'));
    // After a disconnect, a next file without its own connect line is a new stream.
    await writeFile(unrelated, [line(delta(7, 50)), line(delta(7, 51))].join('\n'));
    const { p, records } = pipeline();
    await replayFiles(p, [first, rotated, unrelated]);
    expect(types(records())).toEqual(['snapshot:1', 'delta:2', 'delta:3', 'delta:4', 'gap:50', 'delta:50', 'delta:51']);

    // Replayed alone, the rotated file starts mid-session: one honest gap.
    const alone = pipeline();
    await replayFiles(alone.p, [rotated]);
    expect(types(alone.records())).toEqual(['gap:3', 'delta:3', 'delta:4']);
  });

  it('replay: a file with no boundary lines (older captures) still resets where it starts', async () => {
    const a = join(dir, 'old1.ndjson');
    const b = join(dir, 'old2.ndjson');
    await writeFile(a, [line(subscribed(1)), line(snap(1, 1)), line(delta(1, 2))].join('\n'));
    await writeFile(b, [line(subscribed(1)), line(snap(1, 1)), line(delta(1, 2))].join('\n'));
    const { p, records } = pipeline();
    await replayFiles(p, [a, b]);
    expect(types(records())).toEqual(['snapshot:1', 'delta:2', 'snapshot:1', 'delta:2']);
  });

  it('capture gaps go into the capture file, and replaying it stores the same gaps again', async () => {
    const writer = new CaptureFileWriter({ dir, prefix: 'exchange-b-w1' });
    const sent: Array<{ topic: string; value: string }> = [];
    const producer = { buffered: 0, send: async (m: { topic: string; value: string }) => void sent.push(m) };
    const live = new CapturePipeline({ producer: producer as unknown as BatchingProducer, topics, workerId: 1, log: silentLogger(), files: { 'exchange-b': writer } });
    const opened = { venue: 'exchange-b' as const, connection_id: 'exchange-b-0#1', started_at: '2026-02-14T14:00:00.000Z', ended_at: null, reason: 'idle timeout', markets: [T1] };
    const closed = { ...opened, ended_at: '2026-02-14T14:00:09.500Z' };
    await live.handleFrame('exchange-b', JSON.stringify(snap(1, 1)), at());
    await live.handleGap(opened, { at: new Date(Date.parse(opened.started_at)) });
    await live.handleGap(closed, { at: new Date(Date.parse(closed.ended_at)) });
    await writer.close();
    const liveGaps = sent.filter((m) => m.topic === topics.gaps).map((m) => JSON.parse(m.value) as unknown);
    expect(liveGaps).toEqual([opened, closed]);

    sent.length = 0;
    const replayed = new CapturePipeline({ producer: producer as unknown as BatchingProducer, topics, workerId: 1, log: silentLogger() });
    const summary = await replayFiles(replayed, [writer.files[0]!]);
    expect(summary).toMatchObject({ frames: 1, records: 1, badLines: [] });
    expect(sent.filter((m) => m.topic === topics.gaps).map((m) => JSON.parse(m.value) as unknown)).toEqual(liveGaps);
  });

  it('a malformed gap line is a bad line of the file, not a crash', async () => {
    const f = join(dir, 'badgap.ndjson');
    const gapLine = (gap: unknown) => JSON.stringify({ venue: 'exchange-b', received_at: at().toISOString(), gap });
    await writeFile(f, [gapLine({ venue: 'exchange-b', connection_id: '', started_at: 'x', ended_at: null, reason: 'r', markets: [] }), gapLine('nope'), line(snap(1, 1))].join('\n'));
    const { p } = pipeline();
    const summary = await replayFiles(p, [f]);
    expect(summary.badLines.map((b) => b.error)).toEqual(['gap: connection_id missing or not a string', 'gap: a JSON string, not an object']);
    expect(summary.records).toBe(1);
  });
});

describe('CapturePipeline: the raw value format (KAFKA_RAW_VALUE_FORMAT)', () => {
  it('writes binary values by default and JSON arrays when told json; both decode to the same records', async () => {
    const out: Record<string, Array<string | Buffer>> = {};
    for (const format of [undefined, 'binary', 'json'] as const) {
      const sent: Array<string | Buffer> = [];
      const producer = { buffered: 0, send: async (m: { topic: string; value: string | Buffer }) => void (m.topic === topics.raw['exchange-b'] && sent.push(m.value)) };
      const p = new CapturePipeline({ producer: producer as unknown as BatchingProducer, topics, workerId: 1, log: silentLogger(), ...(format ? { rawValueFormat: format } : {}) });
      const t = Date.UTC(2026, 1, 14, 15);
      for (const [i, f] of [subscribed(1), snap(1, 1), delta(1, 2), delta(1, 3)].entries()) await p.handleFrame('exchange-b', f, new Date(t + i), { writeFile: false });
      out[format ?? 'default'] = sent;
    }
    expect(out.default!.every((v) => Buffer.isBuffer(v) && isBinaryValue(v))).toBe(true);
    expect(out.json!.every((v) => typeof v === 'string' && v.startsWith('['))).toBe(true);
    const records = (vs: Array<string | Buffer>) => vs.flatMap((v) => decoded(Buffer.from(v)));
    expect(records(out.json!)).toHaveLength(3);
    expect(records(out.json!)).toEqual(records(out.binary!));
    expect(records(out.default!)).toEqual(records(out.binary!));
  });
});
