import { describe, expect, it } from 'vitest';
import { concatRawMessages, decodeCaptureGap, decodeRawMessages } from './message-codec.ts';

const b = (record: Record<string, unknown>) =>
  Buffer.from(JSON.stringify([{ venue: 'exchange-b', received_at: '2026-05-01T00:00:00.000Z', worker_id: 1, ingest_seq: '12', dedup_id: 'd', record }]));
const goodB = { type: 'delta', ticker: 'KX-1', timestamp: '2026-05-01T00:00:00.000Z', epoch_ms: 1777593600000, sid: 1, seq: 2 };

describe('raw message decoding', () => {
  it('accepts a well-formed record and merged arrays of them', () => {
    const one = b(goodB).toString();
    const merged = decodeRawMessages('exchange-b', Buffer.from(concatRawMessages([one, one])));
    expect(merged.ok && merged.messages.length).toBe(2);
  });

  it('refuses, with a reason, what would crash or corrupt the sink downstream', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...goodB, timestamp: undefined }, 'bad record'],
      [{ ...goodB, epoch_ms: 1.5 }, 'epoch_ms'],
      [{ ...goodB, epoch_ms: 9e15 }, 'epoch_ms'],
      [{ ...goodB, epoch_ms: '1777593600000' }, 'epoch_ms'],
    ];
    for (const [record, reason] of cases) {
      const d = decodeRawMessages('exchange-b', b(record));
      expect(d.ok).toBe(false);
      if (!d.ok) expect(d.reason).toContain(reason);
    }
    expect(decodeRawMessages('exchange-a', b(goodB)).ok).toBe(false); // wrong topic
    expect(decodeRawMessages('exchange-b', Buffer.from('{oops')).ok).toBe(false);
    expect(decodeRawMessages('exchange-b', null).ok).toBe(false);
  });
});

describe('capture gap decoding', () => {
  const gap = { venue: 'exchange-a', connection_id: 'a-0#1', started_at: '2026-05-01T00:00:00.000Z', ended_at: null, reason: 'closed', markets: ['1', '2'] };
  const enc = (v: unknown) => Buffer.from(JSON.stringify(v));

  it('accepts an open and a closed gap', () => {
    expect(decodeCaptureGap(enc(gap))).toEqual({ ok: true, gap });
    expect(decodeCaptureGap(enc({ ...gap, ended_at: '2026-05-01T00:00:05.000Z' })).ok).toBe(true);
  });

  it('refuses every shape that would fail its insert forever', () => {
    for (const bad of [null, 'text', { ...gap, venue: 'exchange-c' }, { ...gap, started_at: 'yesterday' }, { ...gap, ended_at: 5 }, { ...gap, markets: [1] }, { ...gap, connection_id: undefined }]) {
      expect(decodeCaptureGap(enc(bad)).ok).toBe(false);
    }
    expect(decodeCaptureGap(Buffer.from('{')).ok).toBe(false);
  });
});
