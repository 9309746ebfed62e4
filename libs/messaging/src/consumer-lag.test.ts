import type { Admin } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { consumerGroupLag, partitionEnds } from './consumer-lag.ts';

/** An admin that answers from fixed offsets: per topic, per partition [low, high, committed]. */
function admin(offsets: Record<string, Array<[number, number, number]>>): Admin {
  return {
    fetchTopicOffsets: async (topic: string) => offsets[topic]!.map(([low, high], partition) => ({ partition, low: String(low), high: String(high), offset: String(high) })),
    fetchOffsets: async ({ topics }: { topics: string[] }) => topics.map((topic) => ({ topic, partitions: offsets[topic]!.map(([, , c], partition) => ({ partition, offset: String(c), metadata: null })) })),
  } as unknown as Admin;
}

describe('consumerGroupLag', () => {
  it('per topic: end minus committed; a partition never committed (or committed below the low watermark) counts from the low watermark', async () => {
    const a = admin({ raw: [[0, 10, 4], [5, 9, -1], [6, 8, 2]], gaps: [[0, 3, 3]] });
    expect(await consumerGroupLag(a, 'g', ['raw', 'gaps'])).toEqual(new Map([['raw', 6 + 4 + 2], ['gaps', 0]]));
  });

  it('against ends read earlier: only what was produced before then counts', async () => {
    const before = await partitionEnds(admin({ raw: [[0, 10, 0]] }), ['raw']);
    expect(await consumerGroupLag(admin({ raw: [[0, 50, 10]] }), 'g', ['raw'], before)).toEqual(new Map([['raw', 0]]));
    expect(await consumerGroupLag(admin({ raw: [[0, 50, 7]] }), 'g', ['raw'], before)).toEqual(new Map([['raw', 3]]));
  });
});
