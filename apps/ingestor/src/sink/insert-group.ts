/**
 * Group commit for the sink's inserts into one table: batches of several Kafka partitions
 * that are waiting at the same time go to the engine as ONE insert, and each caller is
 * answered when the insert holding its records is acknowledged (so each partition still
 * commits its offsets only after ClickHouse acknowledged its records).
 *
 * Why: the embedded engine spends a fixed cost per insert (a part per table, its files,
 * checksums, the views on it), so at a few thousand rows per insert that fixed cost is most
 * of its CPU (docs/BENCHMARKS.md, replay). Fewer, larger inserts do the same work for less.
 *
 * A refusal of bad data is never charged to a member for another member's records: a group
 * the engine refuses as bad data is inserted again member by member, and each member gets
 * the outcome of its own records alone (the sink then splits its batch as before). Any other
 * failure (the engine down, a timeout) goes to every member, which retries as before.
 *
 * Paced members (`submit`'s `paced`: records of a replay or an import through the sink, when
 * the sink has caught up with what Kafka holds) wait until `paceMs` after the start of the
 * group's last insert: the sink fetches again only once a fetch's batches are stored, so the
 * records that arrive meanwhile make the next insert larger instead of one more. Without it a
 * sink with CPU to spare keeps up with a replay in many small inserts, and each costs a part,
 * its merges and the rollup's reads over it. A group with any member not paced (live records,
 * or a sink behind) goes at once.
 */
interface Member<T> {
  items: T[];
  token: string;
  paced: boolean;
  resolve: () => void;
  reject: (e: unknown) => void;
}

export class InsertGroup<T> {
  private readonly waiting: Array<Member<T>> = [];
  private draining = false;

  constructor(
    private readonly insert: (items: T[], token: string) => Promise<unknown>,
    private readonly isBadData: (e: unknown) => boolean,
    /** A group takes members up to this many items (one member always goes, however large). */
    private readonly maxItems = 100_000,
    /** Paced members wait until this long after the last insert started (0: never). */
    private readonly paceMs = 0,
  ) {}

  private lastStart = 0;
  /** Ends a pacing wait early (a member not paced arrived). */
  private wake: (() => void) | undefined;

  /** Resolves once `items` are stored, rejects with the error of the insert that held them. */
  submit(items: T[], token: string, paced = false): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ items, token, paced, resolve, reject });
      if (!paced) this.wake?.();
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      // One turn of the event loop first: kafkajs hands a fetch's partition batches to the
      // sink at once, and each is decoded before it is submitted; without the wait the first
      // went alone and the others in a second insert.
      await new Promise((r) => setImmediate(r));
      while (this.waiting.length > 0) {
        const wait = this.paceMs > 0 && this.waiting.every((m) => m.paced) ? this.lastStart + this.paceMs - Date.now() : 0;
        if (wait > 0) {
          await new Promise<void>((r) => {
            const timer = setTimeout(r, wait);
            this.wake = () => (clearTimeout(timer), r());
          });
          this.wake = undefined;
        }
        this.lastStart = Date.now();
        let n = 0;
        let count = 0;
        while (n < this.waiting.length && (n === 0 || count + this.waiting[n]!.items.length <= this.maxItems)) count += this.waiting[n++]!.items.length;
        const group = this.waiting.splice(0, n);
        if (group.length === 1) {
          await this.alone(group[0]!);
          continue;
        }
        try {
          await this.insert(
            group.flatMap((g) => g.items),
            group.map((g) => g.token).join('+'),
          );
          for (const g of group) g.resolve();
        } catch (e) {
          if (!this.isBadData(e)) for (const g of group) g.reject(e);
          else for (const g of group) await this.alone(g);
        }
      }
    } finally {
      this.draining = false;
    }
  }

  private async alone(g: Member<T>): Promise<void> {
    try {
      await this.insert(g.items, g.token);
      g.resolve();
    } catch (e) {
      g.reject(e);
    }
  }
}
