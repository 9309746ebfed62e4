import type { Logger } from '@booktape/config';
import type { Footprint } from '@booktape/storage';

class GaveUp extends Error {}

/** Reads the footprint (FootprintRepository, or a stand-in in tests). */
export interface FootprintReader {
  read(): Promise<Footprint>;
}

/** The last reading: figures with when they were taken, or why there are none. */
export type FootprintReading = { ok: true; at: number; footprint: Footprint } | { ok: false; at: number; reason: string };

export interface FootprintMonitorDeps {
  reader: FootprintReader;
  log: Logger;
  /** A reading (figures or failure) is reused this long: the status is polled, the footprint moves slowly. */
  cacheMs?: number;
  /** The status computation that starts a read waits this long for it, no longer. */
  waitMs?: number;
  /** A read still unanswered after this long is given up (a failure), so a new one can start. */
  giveUpMs?: number;
  now?: () => number;
}

/**
 * The storage footprint for the status, read at most once per `cacheMs`, and never a reason
 * for the status to fail or be slow: the computation that starts a read waits at most
 * `waitMs`; one that finds a read in flight does not wait at all. Meanwhile the previous
 * reading stands (its time says how old it is); with none yet, the footprint is
 * unavailable with a reason. The reasons are public (the status is): fixed sentences, the
 * error itself only in the log.
 */
export class FootprintMonitor {
  private readonly cacheMs: number;
  private readonly waitMs: number;
  private readonly giveUpMs: number;
  private readonly now: () => number;
  private last: FootprintReading | undefined;
  private inFlight: Promise<void> | undefined;

  constructor(private readonly deps: FootprintMonitorDeps) {
    this.cacheMs = deps.cacheMs ?? 30_000;
    this.waitMs = deps.waitMs ?? 1000;
    this.giveUpMs = deps.giveUpMs ?? 15_000;
    this.now = deps.now ?? Date.now;
  }

  /** The reading to show now. Never throws. */
  async current(opts: { clickhouseUp: boolean }): Promise<FootprintReading> {
    if (!opts.clickhouseUp) return { ok: false, at: this.now(), reason: 'ClickHouse is not reachable' };
    const last = this.last;
    if (last && this.now() - last.at < this.cacheMs) return last;
    if (this.inFlight) return this.meanwhile();
    const read = this.start();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([read, new Promise<void>((resolve) => (timer = setTimeout(resolve, this.waitMs)))]).finally(() => clearTimeout(timer));
    return this.inFlight ? this.meanwhile() : this.last!;
  }

  private start(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const giveUp = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new GaveUp(`no answer within ${this.giveUpMs} ms`)), this.giveUpMs);
      // A hung read must not keep a stopping process alive.
      timer.unref();
    });
    // Only one read at a time: a new one starts after this one settled, answered or given up.
    const read = Promise.race([Promise.resolve().then(() => this.deps.reader.read()), giveUp])
      .then(
        (footprint) => {
          this.last = { ok: true, at: this.now(), footprint };
        },
        (err: unknown) => {
          const slow = err instanceof GaveUp;
          this.deps.log.warn({ err: (err as Error)?.message ?? String(err) }, 'cannot read the storage footprint');
          this.last = { ok: false, at: this.now(), reason: slow ? `the footprint query did not answer within ${this.giveUpMs >= 1000 ? `${Math.round(this.giveUpMs / 1000)} s` : `${this.giveUpMs} ms`}` : 'the footprint query failed' };
        },
      )
      .finally(() => {
        clearTimeout(timer);
        this.inFlight = undefined;
      });
    this.inFlight = read;
    return read;
  }

  /** While a read runs: the previous reading (figures or failure) if there is one, else why there is none. */
  private meanwhile(): FootprintReading {
    if (this.last) return this.last;
    return { ok: false, at: this.now(), reason: 'the footprint is being measured (the query is slow to answer)' };
  }
}
