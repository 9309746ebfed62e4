/**
 * The sink's counters and its health as `/monitoring/status` and the status reports show it:
 * pure, no Kafka or engine here.
 */

export interface SinkStats {
  /** Kafka batches stored and committed (one per partition and fetch). */
  batches: number;
  /** Raw inserts acknowledged by ClickHouse: batches of several partitions share one (insert-group.ts). */
  inserts: number;
  stored: number;
  deadLettered: number;
  /**
   * Records ClickHouse refused as bad data (a value the engine cannot parse): split out of
   * their batch and dead-lettered (also counted in `deadLettered`), the rest stored.
   */
  refusedRecords: number;
  /** Inserts that failed for any other reason (each retried with back-off). */
  insertFailures: number;
  /** True while ClickHouse refuses inserts and the sink is holding its partitions. */
  paused: boolean;
  lastStoredAt: number | null;
  /** Stored-partition notifications that failed or timed out (each is retried). */
  notifyFailures: number;
  /** Partitions dropped from the notification backlog when it was full (the sweep finds them). */
  notifyDropped: number;
  /** Consumer crashes since start (each followed by a restart). */
  crashes: number;
}

/**
 * Where the Kafka consumer is:
 * - `joining`: started, not in its group yet (after a crash of the previous process, Kafka
 *   holds its slot until its session times out); nothing is wrong, storing starts soon;
 * - `running`: in the group, consuming;
 * - `restarting`: it crashed and is being brought back: nothing is stored meanwhile;
 * - `stopped`: not started, or stopped.
 */
export type ConsumerState = 'joining' | 'running' | 'restarting' | 'stopped';

export interface SinkHealth extends SinkStats {
  ok: boolean;
  consumer: ConsumerState;
  /** Why it is not ok (or not running yet); null when all is well. */
  reason: string | null;
  /** Partitions waiting to be notified to the rollup queue. */
  notifyPending: number;
}

export interface ConsumerView {
  state: ConsumerState;
  /** The last crash or failed start, if any. */
  lastError: string | null;
  groupId: string;
  /** How long it has been joining (0 unless `joining`). */
  joiningForMs: number;
  /** Joining longer than this is not the dead process's session running out: Kafka is unreachable or refuses. */
  joinGraceMs: number;
}

/**
 * The sink's health (pure). Not ok: a crashed (restarting) or stopped consumer, a paused
 * store, or a join that takes longer than any session timeout explains.
 */
export function sinkHealth(stats: SinkStats, c: ConsumerView, notifyPending: number): SinkHealth {
  let reason: string | null = null;
  let ok = !stats.paused && (c.state === 'running' || c.state === 'joining');
  const last = c.lastError ? `; last attempt: ${c.lastError}` : '';
  if (c.state === 'restarting') reason = `the Kafka consumer crashed (${c.lastError ?? 'unknown error'}) and is restarting; nothing is stored meanwhile`;
  else if (c.state === 'stopped') reason = 'the Kafka consumer is stopped; nothing is stored';
  else if (stats.paused) reason = 'ClickHouse refuses inserts; the sink holds its batch and retries';
  else if (c.state === 'joining' && c.joiningForMs > c.joinGraceMs) {
    ok = false;
    reason = `the Kafka consumer has not joined group ${c.groupId} for ${Math.round(c.joiningForMs / 1000)} s${last}; nothing is stored`;
  } else if (c.state === 'joining') reason = `joining consumer group ${c.groupId} (a crashed process may hold its slot until its session times out)${last}`;
  return { ok, consumer: c.state, reason, notifyPending, ...stats };
}

/** Counters of a sink that has done nothing yet. */
export function emptyStats(): SinkStats {
  return { batches: 0, inserts: 0, stored: 0, deadLettered: 0, refusedRecords: 0, insertFailures: 0, paused: false, lastStoredAt: null, notifyFailures: 0, notifyDropped: 0, crashes: 0 };
}
