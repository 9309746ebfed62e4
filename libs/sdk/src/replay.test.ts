import { describe, expect, it } from 'vitest';
import { BooktapeError } from './errors.ts';
import { ndjsonMessages, type ReplayMessage } from './replay.ts';

/** A body delivered in the given pieces (cut anywhere, multi-byte characters included). */
function body(pieces: Uint8Array[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    pull(c) {
      if (i < pieces.length) c.enqueue(pieces[i++]!);
      else c.close();
    },
  });
}

const bytes = (s: string) => new TextEncoder().encode(s);

function cuts(text: string, every: number): Uint8Array[] {
  const b = bytes(text);
  const out: Uint8Array[] = [];
  for (let i = 0; i < b.length; i += every) out.push(b.subarray(i, i + every));
  return out;
}

async function all(it: AsyncGenerator<ReplayMessage>): Promise<ReplayMessage[]> {
  const out: ReplayMessage[] = [];
  for await (const m of it) out.push(m);
  return out;
}

const LINES = [
  { type: 'start', from: 1, to: 2, markets: ['exchange-b:KX'], unknown_markets: [], snapshot_interval_ms: null, depth: null },
  { type: 'gap', market: 'exchange-b:KX', venue: 'exchange-b', ts: 1, venue_ts: null, received_at: null, ingest_seq: null, kind: 'outage', from: 1, until: 2, detail: 'déclarée ✓' },
  { type: 'end', ts: 2, messages: 1 },
];
const TEXT = LINES.map((l) => JSON.stringify(l)).join('\n') + '\n';

describe('ndjsonMessages', () => {
  it.each([1, 2, 3, 7, 1000])('reads lines cut into pieces of %i bytes', async (n) => {
    expect(await all(ndjsonMessages(body(cuts(TEXT, n))))).toEqual(LINES);
  });

  it('reads a last line without its newline', async () => {
    expect(await all(ndjsonMessages(body([bytes(TEXT.trimEnd())])))).toEqual(LINES);
  });

  it('throws an error line as the API error, after the lines before it', async () => {
    const got: ReplayMessage[] = [];
    const text = `${JSON.stringify(LINES[0])}\n${JSON.stringify({ type: 'error', error: { code: 'service_unavailable', message: 'busy' } })}\n`;
    const e = await (async () => {
      try {
        for await (const m of ndjsonMessages(body([bytes(text)]))) got.push(m);
      } catch (err) {
        return err as BooktapeError;
      }
      return null;
    })();
    expect(got).toEqual([LINES[0]]);
    expect(e).toBeInstanceOf(BooktapeError);
    expect([e!.code, e!.message]).toEqual(['service_unavailable', 'busy']);
  });

  it('throws a stream that ends without its end line', async () => {
    const text = LINES.slice(0, 2).map((l) => JSON.stringify(l)).join('\n') + '\n';
    await expect(all(ndjsonMessages(body([bytes(text)])))).rejects.toMatchObject({ code: 'invalid_response' });
  });

  it.each([
    ['{"type":"start",', 'the replay stream sent a line that is not JSON'],
    ['null', 'the replay stream sent a line that is not a message'],
  ])('throws the line %j as invalid_response, after the lines before it', async (bad, message) => {
    const got: ReplayMessage[] = [];
    const text = `${JSON.stringify(LINES[0])}\n${bad}\n${JSON.stringify(LINES[2])}\n`;
    const e = await (async () => {
      try {
        for await (const m of ndjsonMessages(body([bytes(text)]))) got.push(m);
      } catch (err) {
        return err;
      }
      return null;
    })();
    expect(got).toEqual([LINES[0]]);
    expect(e).toBeInstanceOf(BooktapeError);
    const be = e as BooktapeError;
    expect([be.status, be.code, be.message, be.body]).toEqual([200, 'invalid_response', message, bad]);
  });
});
