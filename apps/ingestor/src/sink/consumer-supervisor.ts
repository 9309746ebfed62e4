import type { Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import type { Logger } from '@booktape/config';
import type { ConsumerState } from './health.ts';

export interface SupervisorOptions {
  groupId: string;
  topics: string[];
  minBytes: number;
  maxWaitMs: number;
  maxBytesPerPartition: number;
  partitionsConcurrently: number;
  sessionTimeoutMs: number;
  restartInitialMs: number;
  restartMaxMs: number;
}

/**
 * Keeps one Kafka consumer of the sink's group running, offsets committed by hand
 * (`eachBatch` commits after storing). kafkajs restarts a crashed consumer itself only after
 * some errors (and then at a fixed pace); after the others it stays down, which used to stop
 * ingestion silently until the process was restarted. Here kafkajs never restarts it
 * (`restartOnFailure`): every crash or failed start gets a fresh consumer, with back-off.
 */
export class ConsumerSupervisor {
  state: ConsumerState = 'stopped';
  /** The last crash or failed start, if any. */
  lastError: string | null = null;
  private joiningSince = 0;
  private consumer: Consumer | undefined;
  private readonly retired = new WeakSet<Consumer>();
  private restartTimer: NodeJS.Timeout | undefined;
  private restartDelay: number;
  private joined: (() => void) | undefined;
  private stopping = false;

  constructor(
    private readonly kafka: Kafka,
    private readonly opts: SupervisorOptions,
    private readonly eachBatch: (p: EachBatchPayload, c: Consumer) => Promise<void>,
    private readonly log: Logger,
    private readonly onCrash: () => void = () => undefined,
  ) {
    this.restartDelay = opts.restartInitialMs;
  }

  /** True while stopping or stopped: inserts under way give up instead of retrying. */
  get isStopping(): boolean {
    return this.stopping;
  }

  /** How long it has been joining (0 unless `joining`). */
  joiningForMs(now = Date.now()): number {
    return this.state === 'joining' ? now - this.joiningSince : 0;
  }

  /** Starts in the background; resolves once the consumer has joined its group (or it is stopped). */
  start(): Promise<void> {
    this.stopping = false;
    this.lastError = null;
    this.state = 'joining';
    this.joiningSince = Date.now();
    this.restartDelay = this.opts.restartInitialMs;
    const ready = new Promise<void>((resolve) => (this.joined = resolve));
    void this.launch();
    return ready;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.state = 'stopped';
    clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    this.joined?.();
    await this.consumer?.disconnect().catch(() => undefined);
    this.consumer = undefined;
  }

  private async launch(): Promise<void> {
    const o = this.opts;
    const c = this.kafka.consumer({
      groupId: o.groupId,
      minBytes: o.minBytes,
      maxWaitTimeInMs: o.maxWaitMs,
      maxBytesPerPartition: o.maxBytesPerPartition,
      sessionTimeout: o.sessionTimeoutMs,
      heartbeatInterval: Math.max(500, Math.floor(o.sessionTimeoutMs / 10)),
      retry: { retries: Number.MAX_SAFE_INTEGER, initialRetryTime: 300, maxRetryTime: 10_000, restartOnFailure: async () => false },
    });
    this.consumer = c;
    // Events of a consumer already replaced (or being replaced) are ignored.
    const current = () => c === this.consumer && !this.retired.has(c) && !this.stopping;
    c.on(c.events.GROUP_JOIN, () => {
      if (!current()) return;
      if (this.state !== 'running') this.log.info({ groupId: o.groupId }, this.lastError ? 'sink consuming again' : 'sink consuming');
      this.state = 'running';
      this.restartDelay = o.restartInitialMs;
      this.joined?.();
    });
    c.on(c.events.CRASH, ({ payload }) => {
      if (!current()) return;
      this.onCrash();
      this.lastError = payload.error?.message ?? String(payload.error);
      this.state = 'restarting';
      this.log.error({ err: this.lastError, retryInMs: this.restartDelay }, 'sink consumer crashed; starting a new one');
      this.relaunch();
    });
    try {
      await c.connect();
      await c.subscribe({ topics: o.topics, fromBeginning: true });
      await c.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: o.partitionsConcurrently,
        eachBatch: (p) => this.eachBatch(p, c),
      });
    } catch (e) {
      if (!current()) return;
      this.lastError = (e as Error).message;
      if (this.state === 'running') this.state = 'restarting';
      this.log.warn({ err: this.lastError, retryInMs: this.restartDelay }, 'sink consumer failed to start; trying again');
      this.relaunch();
    }
  }

  /** Lets the current consumer go and starts a new one after back-off. */
  private relaunch(): void {
    if (this.restartTimer || this.stopping) return;
    const old = this.consumer;
    if (old) this.retired.add(old);
    const wait = this.restartDelay;
    this.restartDelay = Math.min(this.restartDelay * 2, this.opts.restartMaxMs);
    this.restartTimer = setTimeout(() => {
      void (async () => {
        await old?.disconnect().catch(() => undefined);
        this.restartTimer = undefined;
        if (!this.stopping) await this.launch();
      })();
    }, wait);
  }
}
