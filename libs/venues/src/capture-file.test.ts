import type { CaptureLine } from '@booktape/domain';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CaptureFileWriter, countCaptureLines, readCaptureFile, type CaptureEntry } from './capture-file.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'booktape-capture-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function readAll(path: string): Promise<CaptureEntry[]> {
  const out: CaptureEntry[] = [];
  for await (const e of readCaptureFile(path)) out.push(e);
  return out;
}

const lines: CaptureLine[] = [
  { venue: 'exchange-a', received_at: '2026-02-14T15:30:00.123Z', frame: [{ event_type: 'book', market: '0x1', bids: [] }] },
  { venue: 'exchange-a', received_at: '2026-02-14T15:30:00.124Z', frame: 'PONG' },
  { venue: 'exchange-b', received_at: '2026-02-14T15:30:00.125Z', frame: { type: 'orderbook_delta', sid: 5, seq: 2, msg: { market_ticker: 'KX', price: 46 } } },
  { venue: 'exchange-b', received_at: '2026-02-14T15:30:00.126Z', frame: 'ünïcödé garbage' },
];

describe('capture files', () => {
  for (const gzip of [false, true]) {
    it(`round-trips lines ${gzip ? 'through gzip' : 'as plain NDJSON'}`, async () => {
      const w = new CaptureFileWriter({ dir, prefix: 'cap', gzip });
      for (const l of lines) void w.append(l); // not awaited: order must hold anyway
      await w.close();
      expect(w.files).toHaveLength(1);
      const path = w.files[0]!;
      expect(path.endsWith(gzip ? '.ndjson.gz' : '.ndjson')).toBe(true);
      expect(await readAll(path)).toEqual(lines.map((line, i) => ({ lineNo: i + 1, line })));
      expect(await countCaptureLines(path)).toBe(lines.length);
      const raw = await readFile(path);
      const text = (gzip ? gunzipSync(raw) : raw).toString('utf8');
      expect(text.split('\n')[0]).toBe(JSON.stringify(lines[0]));
    });
  }

  it('stores wire text: JSON objects and arrays parsed, anything else as a JSON string', async () => {
    const w = new CaptureFileWriter({ dir, prefix: 'wire' });
    const at = new Date('2026-02-14T15:30:00.123Z');
    await w.appendFrame('exchange-a', at, '[{"event_type":"book"}]');
    await w.appendFrame('exchange-a', at, 'PONG');
    await w.appendFrame('exchange-a', at, '{broken');
    await w.appendFrame('exchange-b', at, Buffer.from('{"type":"ok"}'));
    await w.appendFrame('exchange-a', at, '42');
    await w.close();
    const frames = (await readAll(w.files[0]!)).map((e) => ('line' in e ? e.line.frame : e.error));
    expect(frames).toEqual([[{ event_type: 'book' }], 'PONG', '{broken', { type: 'ok' }, '42']);
  });

  it('rotates by size, with names that sort in writing order', async () => {
    let now = Date.UTC(2026, 1, 14, 15, 30, 0, 0);
    const w = new CaptureFileWriter({ dir, prefix: 'size', rotateBytes: 300, now: () => now });
    const written: CaptureLine[] = [];
    for (let i = 0; i < 20; i++) {
      const l: CaptureLine = { venue: 'exchange-a', received_at: new Date(now).toISOString(), frame: { i, pad: 'x'.repeat(60) } };
      written.push(l);
      await w.append(l);
      if (i % 7 === 0) now += 1;
    }
    await w.close();
    expect(w.files.length).toBeGreaterThan(3);
    expect([...w.files].sort()).toEqual(w.files);
    expect((await readdir(dir)).sort()).toEqual(w.files.map((f) => basename(f)));
    const back: CaptureLine[] = [];
    for (const f of w.files) {
      expect((await stat(f)).size).toBeLessThanOrEqual(300);
      for (const e of await readAll(f)) if ('line' in e) back.push(e.line);
    }
    expect(back).toEqual(written);
    expect(basename(w.files[0]!)).toMatch(/^size-20260214T153000\.000Z-000001\.ndjson$/);
  });

  it('rotates by age', async () => {
    let now = Date.UTC(2026, 1, 14, 15, 30, 0, 0);
    const w = new CaptureFileWriter({ dir, prefix: 'age', rotateMs: 1000, gzip: true, now: () => now });
    for (let i = 0; i < 5; i++) {
      await w.append({ venue: 'exchange-b', received_at: new Date(now).toISOString(), frame: { i } });
      now += 600;
    }
    await w.close();
    // opened at 0, 1200, 2400: lines at 0 and 600; 1200 and 1800; 2400
    expect(w.files).toHaveLength(3);
    const counts = await Promise.all(w.files.map((f) => countCaptureLines(f)));
    expect(counts).toEqual([2, 2, 1]);
  });

  it('never overwrites a file that exists already', async () => {
    const now = Date.UTC(2026, 1, 14, 15, 30, 0, 0);
    await writeFile(join(dir, 'dup-20260214T153000.000Z-000001.ndjson'), 'keep me\n');
    const w = new CaptureFileWriter({ dir, prefix: 'dup', now: () => now });
    await w.append(lines[0]!);
    await w.close();
    expect(basename(w.files[0]!)).toBe('dup-20260214T153000.000Z-000002.ndjson');
    expect(await readFile(join(dir, 'dup-20260214T153000.000Z-000001.ndjson'), 'utf8')).toBe('keep me\n');
  });

  it('refuses appends after close, and close twice is harmless', async () => {
    const w = new CaptureFileWriter({ dir, prefix: 'closed' });
    await w.append(lines[0]!);
    await w.close();
    await w.close();
    await expect(w.append(lines[0]!)).rejects.toThrow('closed');
  });

  it('makes gzip output readable on flush, before close', async () => {
    const w = new CaptureFileWriter({ dir, prefix: 'flush', gzip: true, flushMs: 0 });
    await w.append(lines[0]!);
    await w.append(lines[2]!);
    await w.flush();
    const entries = await readAll(w.currentPath!);
    // no gzip trailer yet: two good lines, then the truncated tail is reported
    expect(entries.slice(0, 2)).toEqual([
      { lineNo: 1, line: lines[0] },
      { lineNo: 2, line: lines[2] },
    ]);
    expect(entries[2]).toMatchObject({ lineNo: 3, error: expect.stringContaining('ends early') });
    await w.close();
  });

  it('flushes gzip output by itself shortly after an append', async () => {
    const w = new CaptureFileWriter({ dir, prefix: 'auto', gzip: true, flushMs: 10 });
    await w.append(lines[0]!);
    await new Promise((r) => setTimeout(r, 80));
    const entries = await readAll(w.currentPath!);
    expect(entries[0]).toEqual({ lineNo: 1, line: lines[0] });
    await w.close();
  });

  it('writes and reads connection boundary lines between frames', async () => {
    const w = new CaptureFileWriter({ dir, prefix: 'bnd', gzip: true });
    const at = new Date('2026-02-14T15:30:00.120Z');
    void w.appendBoundary('exchange-b', at, { kind: 'connect', connection_id: 'exchange-b-0#1' });
    void w.append(lines[2]!);
    void w.appendBoundary('exchange-b', new Date('2026-02-14T15:30:01Z'), { kind: 'disconnect', connection_id: 'exchange-b-0#1', reason: 'idle timeout' });
    await w.close();
    const path = w.files[0]!;
    const text = gunzipSync(await readFile(path)).toString('utf8').split('\n');
    expect(text[0]).toBe('{"venue":"exchange-b","received_at":"2026-02-14T15:30:00.120Z","boundary":{"kind":"connect","connection_id":"exchange-b-0#1"}}');
    expect(await readAll(path)).toEqual([
      { lineNo: 1, line: { venue: 'exchange-b', received_at: '2026-02-14T15:30:00.120Z', boundary: { kind: 'connect', connection_id: 'exchange-b-0#1' } } },
      { lineNo: 2, line: lines[2] },
      {
        lineNo: 3,
        line: { venue: 'exchange-b', received_at: '2026-02-14T15:30:01.000Z', boundary: { kind: 'disconnect', connection_id: 'exchange-b-0#1', reason: 'idle timeout' } },
      },
    ]);
    expect(await countCaptureLines(path)).toBe(3);
  });

  it('reports a line whose boundary is malformed', async () => {
    const path = join(dir, 'bnd.ndjson');
    const at = '2026-02-14T15:30:00Z';
    await writeFile(
      path,
      [
        JSON.stringify({ venue: 'exchange-b', received_at: at, boundary: { kind: 'reconnect', connection_id: 'c' } }),
        JSON.stringify({ venue: 'exchange-b', received_at: at, boundary: { kind: 'connect' } }),
        JSON.stringify({ venue: 'exchange-b', received_at: at, boundary: 'connect' }),
        JSON.stringify({ venue: 'exchange-b', received_at: at, boundary: { kind: 'disconnect', connection_id: 'c', reason: 5 } }),
        JSON.stringify({ venue: 'exchange-b', received_at: at, boundary: { kind: 'disconnect', connection_id: 'c', reason: null } }),
      ].join('\n'),
    );
    expect(await readAll(path)).toEqual([
      { lineNo: 1, error: 'boundary: kind is not connect or disconnect: "reconnect"' },
      { lineNo: 2, error: 'boundary: connection_id missing or not a string' },
      { lineNo: 3, error: 'boundary: a JSON string, not an object' },
      { lineNo: 4, error: 'boundary: reason is not a string' },
      { lineNo: 5, line: { venue: 'exchange-b', received_at: at, boundary: { kind: 'disconnect', connection_id: 'c' } } },
    ]);
  });

  it('reports malformed lines and goes on reading', async () => {
    const path = join(dir, 'bad.ndjson');
    const good = JSON.stringify(lines[0]);
    await writeFile(
      path,
      [
        good,
        '{not json',
        '',
        JSON.stringify({ venue: 'exchange-c', received_at: '2026-02-14T15:30:00Z', frame: 1 }),
        JSON.stringify({ venue: 'exchange-a', frame: 1 }),
        JSON.stringify({ venue: 'exchange-a', received_at: 'yesterday', frame: 1 }),
        JSON.stringify({ venue: 'exchange-a', received_at: '2026-02-30T25:00:00Z', frame: 1 }),
        JSON.stringify({ venue: 'exchange-a', received_at: '2026-02-14T15:30:00Z' }),
        '[1,2]',
        '   ',
        good,
        JSON.stringify({ venue: 'exchange-b', received_at: '2045-01-01T00:00:00Z', frame: 1 }),
      ].join('\n'),
    );
    const entries = await readAll(path);
    expect(entries).toEqual([
      { lineNo: 1, line: lines[0] },
      { lineNo: 2, error: 'not JSON' },
      { lineNo: 4, error: 'unknown venue "exchange-c"' },
      { lineNo: 5, error: 'received_at missing' },
      { lineNo: 6, error: 'received_at is not an ISO 8601 time: "yesterday"' },
      { lineNo: 7, error: 'received_at is not an ISO 8601 time: "2026-02-30T25:00:00Z"' },
      { lineNo: 8, error: 'neither frame nor boundary' },
      { lineNo: 9, error: 'a JSON array, not an object' },
      { lineNo: 11, line: lines[0] },
      // The ingest sequence numbers receive times up to 2^41 ms (2039-09-07): later ones are refused, not a crash.
      { lineNo: 12, error: 'received_at 2045-01-01T00:00:00Z is outside 1970..2039-09-07T15:47:35.551Z, the receive times the ingest sequence numbers' },
    ]);
    expect(await countCaptureLines(path)).toBe(entries.length);
  });

  it('ends a truncated gzip file with an error entry instead of throwing', async () => {
    const body = `${lines.map((l) => JSON.stringify({ ...l, frame: { pad: 'y'.repeat(2000), l: l.frame } })).join('\n')}\n`;
    const whole = gzipSync(Buffer.from(body));
    const path = join(dir, 'cut.ndjson.gz');
    await writeFile(path, whole.subarray(0, Math.floor(whole.length * 0.7)));
    const entries = await readAll(path);
    const last = entries.at(-1)!;
    expect(last).toMatchObject({ error: expect.stringContaining('compressed data ends early or is corrupt') });
    expect(entries.slice(0, -1).every((e) => 'line' in e)).toBe(true);
    expect(await countCaptureLines(path)).toBe(entries.length);
  });

  it('reports a file that is not gzip at all as one error entry', async () => {
    const path = join(dir, 'fake.ndjson.gz');
    await writeFile(path, 'plain text\n');
    const entries = await readAll(path);
    expect(entries).toEqual([{ lineNo: 1, error: expect.stringContaining('corrupt') }]);
    expect(await countCaptureLines(path)).toBe(1);
  });

  it('throws when the file cannot be read', async () => {
    await expect(readAll(join(dir, 'missing.ndjson.gz'))).rejects.toThrow(/ENOENT/);
    await expect(countCaptureLines(join(dir, 'missing.ndjson'))).rejects.toThrow(/ENOENT/);
  });

  it('reads a last line without a newline', async () => {
    const path = join(dir, 'nonl.ndjson');
    await writeFile(path, `${JSON.stringify(lines[0])}\n${JSON.stringify(lines[1])}`);
    expect(await readAll(path)).toEqual([
      { lineNo: 1, line: lines[0] },
      { lineNo: 2, line: lines[1] },
    ]);
    expect(await countCaptureLines(path)).toBe(2);
  });
});
