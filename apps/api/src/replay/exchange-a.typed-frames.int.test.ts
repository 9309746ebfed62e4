import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExchangeAMessage } from '@booktape/domain';
import { migrate, RawEventsRepository, ReplayRepository } from '@booktape/storage';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { exchangeAMessage, exchangeAMessages } from '../../../../libs/storage/src/venue-shapes.test-support.ts';
import { ExchangeAFrameWriter, type OutFrame } from './exchange-a.frames.ts';
import { ExchangeAFrameEncoder } from './exchange-a.frames.test-support.ts';

/**
 * End to end through the store: the frames the replay sends now (the typed read, the frame
 * writer) against the frames it sent before (the payload read, the encoder), for the venue
 * shapes and arbitrary records stored by the sink's own insert, several records to a venue
 * frame and to a millisecond: the same frames, byte for byte, in the same order.
 */

let t: TestClickHouse;
let raw: RawEventsRepository;
let replay: ReplayRepository;

beforeAll(async () => {
  t = await tempClickHouse();
  await migrate(t.ch);
  raw = new RawEventsRepository(t.ch);
  replay = new ReplayRepository(t.ch);
});
afterAll(async () => t?.cleanup());

const DAY = Date.UTC(2026, 2, 14);
const MARKET = `0x${'bd31'.repeat(16)}`;

describe('exchange A frames from the typed read', () => {
  it('are the frames of the payload read, byte for byte', async () => {
    // Several records per venue frame (ingest_seq >> 11) and per millisecond, list-shaped ones among them.
    const ms: ExchangeAMessage[] = [...exchangeAMessages(), ...fc.sample(exchangeAMessage, { numRuns: 600, seed: 2525 })].map((m, i) => ({
      ...m,
      dedup_id: `tf-${i}`,
      ingest_seq: String((2n ** 40n + BigInt(Math.floor(i / 3))) * 2048n + BigInt(i % 3)),
      event: { ...m.event, market: MARKET, timestamp: String(DAY + 1000 + Math.floor(i / 3)) },
    }));
    await raw.insert('exchange-a', ms.map((message, i) => ({ message, position: { partition: 0, offset: String(i) } })), 'typed-frames');
    const assets = [...new Set(ms.map((m) => m.event.asset_id).filter((a) => a !== ''))];
    const to = DAY + 86_400_000 - 1;

    const old: OutFrame[] = [];
    const enc = new ExchangeAFrameEncoder();
    for await (const row of replay.rows('exchange-a', [MARKET], DAY, to, { assets })) old.push(...enc.push(JSON.parse(row.payload) as Record<string, unknown>, row.seq));
    old.push(...enc.end());

    const now: OutFrame[] = [];
    const w = new ExchangeAFrameWriter();
    for await (const batch of replay.recordsA([MARKET], DAY, to, { assets })) for (const rec of batch) w.push(rec, now);
    w.end(now);

    expect(old.length).toBeGreaterThan(300);
    expect(now.length).toBe(old.length);
    now.forEach((f, i) => expect(f).toEqual(old[i]));
  });
});
