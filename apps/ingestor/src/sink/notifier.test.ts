import { describe, expect, it } from 'vitest';
import { silentLogger } from '@booktape/config';
import { partitionsOf, type PartitionRef } from '@booktape/messaging';
import { emptyStats } from './health.ts';
import { StoredNotifier } from './notifier.ts';
import { aMessage } from './records.test-support.ts';

const opts = { notifyTimeoutMs: 50, notifyMaxPending: 1000, retryInitialMs: 5, retryMaxMs: 20 };
const until = async (what: string, ok: () => boolean, ms = 2000) => {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
};

/** A started notifier whose deliveries fail (Redis away) until `up()`; `delivered`: what it delivered since. */
function failingUntilUp() {
  const stats = emptyStats();
  let up = false;
  const delivered: PartitionRef[] = [];
  const n = new StoredNotifier(
    async (p) => {
      if (!up) throw new Error('redis away');
      delivered.push(...p);
    },
    opts,
    silentLogger(),
    stats,
  );
  n.start();
  return { n, stats, delivered, up: () => void (up = true) };
}

describe('StoredNotifier', () => {
  it('delivers the partitions of stored records, once each, and waits for the delivery', async () => {
    const calls: PartitionRef[][] = [];
    const n = new StoredNotifier((p) => void calls.push(p), opts, silentLogger(), emptyStats());
    n.start();
    const messages = [aMessage(1), aMessage(2), aMessage(4), aMessage(1)];
    await n.notify(messages);
    expect(calls).toEqual([[...partitionsOf(messages).values()]]);
    expect(calls[0]).toHaveLength(2);
    expect(n.size).toBe(0);
  });

  it('while deliveries fail, keeps the partitions (deduplicated), never makes the caller wait, and sends them once it works again', async () => {
    const { n, stats, delivered, up } = failingUntilUp();
    await n.notify([aMessage(1)]);
    await until('a failure', () => stats.notifyFailures >= 1);
    const t0 = Date.now();
    await n.notify([aMessage(4), aMessage(2)]); // 4 is in 1's partition
    expect(Date.now() - t0).toBeLessThan(opts.notifyTimeoutMs);
    expect(n.size).toBe(2);
    up();
    await until('delivery', () => n.size === 0 && delivered.length === 2);
    expect(new Set(delivered.map((p) => p.asset))).toEqual(new Set(['tok1', 'tok2']));
    await n.stop();
  });

  it("partitions kept while deliveries fail carry the lowest event time of every merged notification (the rollup's late-data hint)", async () => {
    // Every record of tok1 (1, 4, 7, 10: i % 3 === 1), the lowest first, in the middle or split across notifications.
    for (const order of [
      [[4], [1], [7, 10]],
      [[1], [4, 7], [10]],
    ]) {
      const { n, stats, delivered, up } = failingUntilUp();
      for (const batch of order) {
        await n.notify(batch.map((i) => aMessage(i)));
        await until('a failure', () => stats.notifyFailures >= 1);
      }
      up();
      await until('delivery', () => n.size === 0 && delivered.length === 1);
      expect(delivered[0]!.earliestMs).toBe(Number(aMessage(1).event.timestamp));
      await n.stop();
    }
  });

  it('counts a hung delivery as failed, and drops partitions beyond notifyMaxPending (the rollup sweep finds them)', async () => {
    const stats = emptyStats();
    const n = new StoredNotifier(() => new Promise<void>(() => undefined), { ...opts, notifyMaxPending: 2 }, silentLogger(), stats);
    n.start();
    await n.notify([aMessage(0), aMessage(1), aMessage(2)]);
    expect(stats.notifyDropped).toBe(1);
    await until('a timed-out delivery', () => stats.notifyFailures >= 1);
    await n.stop();
  });
});
