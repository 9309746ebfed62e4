import { frameOf, isListShaped, listFrame, venueEvent, type Json, type OutFrame } from './exchange-a.frames.ts';

/**
 * The replay's frames by the rules of exchange-a.frames.ts, as plain objects stringified: the
 * reference ExchangeAFrameWriter (which writes the same text from the typed read with
 * templates) is held to, byte for byte, by the tests.
 *
 * `push` takes stored records in serving order and returns the frames complete so far (a
 * list-shaped price_change waits for the rest of its frame), `end` the last one.
 */
export class ExchangeAFrameEncoder {
  private group: Json[] = [];
  private groupKey = '';

  push(record: Json, seq: string): OutFrame[] {
    if (isListShaped(record)) {
      const key = `${frameOf(seq)}\u0000${String(record.market)}\u0000${String(record.timestamp)}`;
      if (this.group.length > 0 && key === this.groupKey && !this.group.some((g) => g.asset_id === record.asset_id)) {
        this.group.push(record);
        return [];
      }
      const out = this.end();
      this.group = [record];
      this.groupKey = key;
      return out;
    }
    const out = this.end();
    out.push({ text: JSON.stringify(venueEvent(record)), ts: Number(record.timestamp) });
    return out;
  }

  end(): OutFrame[] {
    if (this.group.length === 0) return [];
    const frame = { text: JSON.stringify(listFrame(this.group)), ts: Number(this.group[0]!.timestamp) };
    this.group = [];
    return [frame];
  }
}

