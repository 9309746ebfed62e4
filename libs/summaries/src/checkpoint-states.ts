/**
 * Checkpoint states read by book answers, kept in memory: a hot asset's answers (a replay's
 * opening books, a client stepping through a day, many clients asking for the same book)
 * start from the same few checkpoints, and each state read is an engine round trip that
 * waits its turn behind every other bound query of the process.
 *
 * A state is named by its asset, date, day build (base version) and position: the rows of
 * one build at one position hold the same book, and a rebuild writes a new build, so a
 * kept state never goes stale. At most `maxChars` characters are kept, the names counted
 * with their states (a near-empty book's name is longer than its state), the least recently
 * used first out.
 */
export class CheckpointStates {
  private readonly entries = new Map<string, string>();
  private chars = 0;

  constructor(private readonly maxChars: number) {}

  get(id: string): string | undefined {
    const hit = this.entries.get(id);
    if (hit === undefined) return undefined;
    this.entries.delete(id);
    this.entries.set(id, hit);
    return hit;
  }

  set(id: string, state: string): void {
    if (id.length + state.length > this.maxChars) return;
    const old = this.entries.get(id);
    if (old !== undefined) {
      this.entries.delete(id);
      this.chars -= id.length + old.length;
    }
    this.entries.set(id, state);
    this.chars += id.length + state.length;
    for (const [k, v] of this.entries) {
      if (this.chars <= this.maxChars) break;
      this.entries.delete(k);
      this.chars -= k.length + v.length;
    }
  }
}
