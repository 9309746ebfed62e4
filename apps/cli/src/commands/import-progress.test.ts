import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { exportUrl, parseExportOptions, ExportUsageError } from './export.ts';
import { importProgress } from './import.ts';

/** The import's progress off a terminal, and the export's --include (what an import needs). */

afterEach(() => vi.useRealTimers());

function sink(isTTY: boolean) {
  const s = new PassThrough() as PassThrough & { isTTY?: boolean };
  s.isTTY = isTTY;
  let text = '';
  s.on('data', (c: Buffer) => (text += c.toString()));
  return { stream: s, text: () => text };
}

describe('import progress off a terminal', () => {
  it('writes nothing for an import that ends before the first interval', () => {
    vi.useFakeTimers();
    const out = sink(false);
    const p = importProgress(out.stream, 10_000);
    p.start(2);
    p.file(0, '/x/a.parquet');
    p.file(1, '/x/a.parquet');
    vi.advanceTimersByTime(9_999);
    p.stop();
    vi.advanceTimersByTime(60_000);
    expect(out.text()).toBe('');
  });

  it('writes one plain line per interval while it runs, naming the file at hand and its progress', () => {
    vi.useFakeTimers();
    const out = sink(false);
    const p = importProgress(out.stream, 10_000);
    p.start(3);
    p.file(1, '/x/cap-1.ndjson');
    p.detail('500/2000 lines');
    vi.advanceTimersByTime(10_000);
    p.file(2, '/x/b.parquet');
    vi.advanceTimersByTime(10_000);
    p.stop();
    expect(out.text()).toBe('import: 1/3 file(s) done; at cap-1.ndjson (500/2000 lines)\nimport: 2/3 file(s) done; at b.parquet\n');
    expect(out.text()).not.toContain('\x1b');
  });
});

describe('import progress on a terminal', () => {
  it('draws a bar of the files, keeps result lines whole, and clears the bar at the end', () => {
    const err = sink(true);
    const out = sink(false);
    const p = importProgress(err.stream);
    p.start(2);
    p.file(0, '/x/cap-1.ndjson');
    p.detail('cap-1.ndjson: 500/2000 lines');
    p.log(out.stream, 'cap-1.ndjson: 2000 rows, 1990 records stored');
    p.file(1, '/x/b.parquet');
    p.stop();
    expect(err.text()).toMatch(/import \[[^\]]*\] 0\/2 files \| [0-9:hms ]+ \| /);
    expect(err.text()).toContain('cap-1.ndjson');
    expect(out.text()).toBe('cap-1.ndjson: 2000 rows, 1990 records stored\n');
  });
});

describe('export --include', () => {
  const base = { venue: 'a', market: `0x${'ab'.repeat(32)}`, from: '2026-03-01', to: '2026-03-02', out: 'f.parquet', key: 'k', api: 'http://127.0.0.1:1' };
  it('asks the API for the columns in its order, source before record', () => {
    const o = parseExportOptions({ ...base, include: 'record,source' }, {});
    expect(o.include).toEqual(['source', 'record']);
    expect(new URL(exportUrl(o)).searchParams.get('include')).toBe('source,record');
    expect(new URL(exportUrl(parseExportOptions(base, {}))).searchParams.has('include')).toBe(false);
  });
  it('is for raw exports of one market, of known fields', () => {
    expect(() => parseExportOptions({ ...base, include: 'record', kind: 'summary' }, {})).toThrow(ExportUsageError);
    expect(() => parseExportOptions({ ...base, include: 'payload' }, {})).toThrow('--include takes source and record');
  });
});
