import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { streamLines } from './stream.ts';

async function* chunksOf(bytes: Buffer, cuts: number[]): AsyncGenerator<Buffer> {
  let at = 0;
  for (const c of [...new Set(cuts)].filter((c) => c > 0 && c < bytes.length).sort((a, b) => a - b)) {
    yield bytes.subarray(at, c);
    at = c;
  }
  yield bytes.subarray(at);
}

async function collect(it: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const l of it) out.push(l);
  return out;
}

describe('streamLines', () => {
  it('yields every non-empty line whole, wherever the chunks cut (inside a multi-byte character too)', async () => {
    const line = fc.string({ unit: 'binary', maxLength: 40 }).map((s) => s.replace(/\n/g, ''));
    await fc.assert(
      fc.asyncProperty(fc.array(line, { maxLength: 30 }), fc.boolean(), fc.array(fc.nat(2000), { maxLength: 40 }), async (lines, trailing, cuts) => {
        const bytes = Buffer.from(lines.join('\n') + (trailing ? '\n' : ''), 'utf8');
        const got = await collect(streamLines(chunksOf(bytes, cuts)));
        // What the old reader gave: the text decoded whole, split on \n, empty lines dropped.
        expect(got).toEqual(bytes.toString('utf8').split('\n').filter((l) => l.length > 0));
      }),
      { numRuns: 500 },
    );
  });

  it('reads plain Uint8Array chunks (the embedded engine gives those) and an empty stream', async () => {
    async function* raw(): AsyncGenerator<Uint8Array> {
      yield new Uint8Array(Buffer.from('{"a":1}\n{"b":"é'));
      yield new Uint8Array(Buffer.from('"}\n'));
    }
    expect(await collect(streamLines(raw()))).toEqual(['{"a":1}', '{"b":"é"}']);
    expect(await collect(streamLines((async function* () {})()))).toEqual([]);
  });
});
