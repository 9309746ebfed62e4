import type { Admin } from 'kafkajs';

/** Per partition (`<topic>/<partition>`): its end offset (`high`) and its low watermark. */
export type PartitionEnds = Map<string, { high: bigint; low: bigint }>;

export async function partitionEnds(admin: Admin, topics: readonly string[]): Promise<PartitionEnds> {
  const ends: PartitionEnds = new Map();
  await Promise.all(
    topics.map(async (topic) => {
      for (const p of await admin.fetchTopicOffsets(topic)) ends.set(`${topic}/${p.partition}`, { high: BigInt(p.high), low: BigInt(p.low) });
    }),
  );
  return ends;
}

/**
 * Lag of a consumer group over the given topics, per topic: per partition, the end offset
 * minus the committed one (a partition the group never committed counts from its low
 * watermark, where a `fromBeginning` consumer starts). The ends are read now unless given:
 * ends read earlier measure what is left of the messages produced before then.
 */
export async function consumerGroupLag(admin: Admin, groupId: string, topics: readonly string[], ends?: PartitionEnds): Promise<Map<string, number>> {
  const until = ends ?? (await partitionEnds(admin, topics));
  const lag = new Map<string, number>(topics.map((t) => [t, 0]));
  const committed = new Map<string, bigint>();
  for (const t of await admin.fetchOffsets({ groupId, topics: [...topics] })) {
    for (const p of t.partitions) if (p.offset !== '-1') committed.set(`${t.topic}/${p.partition}`, BigInt(p.offset));
  }
  for (const [k, { high, low }] of until) {
    const c = committed.get(k);
    const from = c === undefined || c < low ? low : c;
    if (high > from) {
      const topic = k.slice(0, k.lastIndexOf('/'));
      lag.set(topic, (lag.get(topic) ?? 0) + Number(high - from));
    }
  }
  return lag;
}
