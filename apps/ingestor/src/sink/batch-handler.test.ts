import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { silentLogger } from '@booktape/config';
import type { CaptureGap, RawMessage, Venue } from '@booktape/domain';
import { decodeRawMessages, encodeRawValue } from '@booktape/messaging';
import type { StoredMessage } from '@booktape/storage';
import { handleBatch, type BatchLease, type BatchPorts, type PartitionBatch } from './batch-handler.ts';
import type { DeadLetter } from './dead-letter.ts';
import { emptyStats } from './health.ts';
import { insertWithRetry } from './insert-retry.ts';
import { aMessage } from './records.test-support.ts';

class BadData extends Error {}
const TOPICS = { raw: { 'exchange-a': 'raw.a', 'exchange-b': 'raw.b' } as Record<Venue, string>, gaps: 'gaps' };

/**
 * The handler against fakes: an engine that refuses any insert holding a record with a
 * negative worker_id (as ClickHouse refuses a whole insert for one bad row) and is down for
 * its first `down` inserts; a log of everything in the order it happened.
 */
function harness(o: { down?: number; lose?: boolean } = {}) {
  const events: string[] = [];
  const stored: StoredMessage[] = [];
  const letters: DeadLetter[] = [];
  const notified: RawMessage[] = [];
  const stats = emptyStats();
  let down = o.down ?? 0;
  let held = true;
  const insert = async (rows: StoredMessage[], token: string) => {
    events.push(`insert ${token}`);
    if (down > 0) {
      down -= 1;
      if (o.lose) held = false; // the partition went to another member meanwhile
      throw new Error('engine unavailable');
    }
    if (rows.some((r) => r.message.worker_id < 0)) throw new BadData('CANNOT_PARSE_NUMBER');
    stored.push(...rows);
  };
  const lease: BatchLease = {
    held: () => held,
    heartbeat: async () => undefined,
    commit: async (offset) => void events.push(`commit ${offset}`),
  };
  const ports: BatchPorts = {
    gapsTopic: TOPICS.gaps,
    venueOfTopic: (t) => (Object.entries(TOPICS.raw).find(([, topic]) => topic === t)?.[0] as Venue | undefined),
    insertGrouped: (_v, rows, token) => insert(rows, token),
    insertAlone: (_v, rows, token) => insert(rows, token),
    insertGaps: async (gaps: CaptureGap[]) => void events.push(`gaps ${gaps.length}`),
    attempt: (what, l, fn) =>
      insertWithRetry(fn, { what, log: silentLogger(), stats, retryInitialMs: 1, retryMaxMs: 1, lease: l, sleep: async () => undefined, refusalOf: (e) => (e instanceof BadData ? 'CANNOT_PARSE_NUMBER' : null) }),
    deadLetter: async (d) => {
      events.push(`dead-letter ${d.source.offset}`);
      letters.push(d);
    },
    notify: async (messages) => {
      events.push('notify');
      notified.push(...messages);
    },
    stats,
    log: silentLogger(),
  };
  return { events, stored, letters, notified, stats, lease, ports };
}

const batchOf = (topic: string, values: Array<Buffer | null>, first = 0): PartitionBatch => ({
  topic,
  partition: 3,
  messages: values.map((value, i) => ({ offset: String(first + i), value })),
  lastOffset: () => String(first + values.length - 1),
});

describe('handleBatch', () => {
  it('commits the offset after the last message only after the engine acknowledged the insert and the rollup queue heard', async () => {
    const h = harness({ down: 2 });
    const batch = batchOf('raw.a', [encodeRawValue([aMessage(1), aMessage(2)]), encodeRawValue([aMessage(3)])], 10);
    expect(await handleBatch(batch, h.lease, h.ports)).toBe('committed');
    expect(h.events).toEqual(['insert raw.a/3/10-11', 'insert raw.a/3/10-11', 'insert raw.a/3/10-11', 'notify', 'commit 12']);
    expect(h.stored.map((r) => r.message)).toEqual([aMessage(1), aMessage(2), aMessage(3)]);
    expect(h.notified).toEqual([aMessage(1), aMessage(2), aMessage(3)]);
    expect(h.stats).toMatchObject({ batches: 1, stored: 3, insertFailures: 2, paused: false });
  });

  it('commits nothing when the insert is abandoned (stop, rebalance): the batch is read again', async () => {
    const h = harness({ down: 1, lose: true });
    expect(await handleBatch(batchOf('raw.a', [encodeRawValue([aMessage(1)])]), h.lease, h.ports)).toBe('abandoned');
    expect(h.events.filter((e) => e.startsWith('commit') || e === 'notify')).toEqual([]);
    expect(h.stats.batches).toBe(0);
  });

  it('over any batch with bad records: stores every good record, dead-letters each bad one alone as its JSON, then commits', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(fc.boolean(), { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 12 }), async (shape) => {
        const h = harness();
        let n = 0;
        const values = shape.map((recs) => recs.map((bad) => aMessage(n++, bad ? { worker_id: -1 } : {})));
        const batch = batchOf('raw.a', values.map((v) => encodeRawValue(v)), 100);
        expect(await handleBatch(batch, h.lease, h.ports)).toBe('committed');
        const all = values.flatMap((v, i) => v.map((m) => ({ m, offset: String(100 + i) })));
        expect(h.stored.map((r) => r.message)).toEqual(all.filter((x) => x.m.worker_id >= 0).map((x) => x.m));
        const bad = all.filter((x) => x.m.worker_id < 0);
        expect(h.letters.map((l) => l.source.offset)).toEqual(bad.map((x) => x.offset));
        for (const [i, l] of h.letters.entries()) {
          expect(l.frame!.encoding).toBe('utf8');
          const back = decodeRawMessages('exchange-a', Buffer.from(l.frame!.text));
          expect(back.ok && back.messages).toEqual([bad[i]!.m]);
          expect(l.reason).toMatch(/^clickhouse refused the record \(CANNOT_PARSE_NUMBER\)/);
        }
        expect(h.events.at(-1)).toBe(`commit ${100 + values.length}`);
        expect(h.stats.refusedRecords).toBe(bad.length);
        // Notified of what was stored, not of what was refused.
        expect(h.notified).toEqual(h.stored.map((r) => r.message));
      }),
      { numRuns: 60 },
    );
  });

  it('dead-letters a message that does not decode (binary in base64) before storing the rest', async () => {
    const h = harness();
    const cut = Buffer.from(encodeRawValue([aMessage(1)])).subarray(0, 10);
    expect(await handleBatch(batchOf('raw.a', [cut, encodeRawValue([aMessage(2)])]), h.lease, h.ports)).toBe('committed');
    expect(h.events).toEqual(['dead-letter 0', 'insert raw.a/3/0-1', 'notify', 'commit 2']);
    expect(h.letters[0]).toMatchObject({ venue: 'exchange-a', frame: { text: cut.toString('base64'), encoding: 'base64' } });
  });

  it('stores capture gaps from the gaps topic, and ignores an empty batch or a topic it does not know', async () => {
    const h = harness();
    const gap = { venue: 'exchange-a', connection_id: 'c', started_at: '2026-04-02T12:00:00.000Z', ended_at: null, reason: 'r', markets: [] };
    expect(await handleBatch(batchOf('gaps', [Buffer.from(JSON.stringify(gap)), Buffer.from('nope')]), h.lease, h.ports)).toBe('committed');
    expect(h.events).toEqual(['dead-letter 1', 'gaps 1', 'commit 2']);
    expect(await handleBatch(batchOf('raw.a', []), h.lease, h.ports)).toBe('ignored');
    expect(await handleBatch(batchOf('other', [encodeRawValue([aMessage(1)])]), h.lease, h.ports)).toBe('ignored');
  });
});
