import { describe, expect, it } from 'vitest';
import { chooseRedis } from '../local-services.ts';
import { datesOf, dryRunText } from './rollup.ts';

describe('the Redis rollup uses', () => {
  it('is REDIS_URL when set, else the project port, else the project default; and says which', () => {
    expect(chooseRedis({ REDIS_URL: 'redis://10.0.0.5:6379', BOOKTAPE_REDIS_PORT: '17000' })).toEqual({ url: 'redis://10.0.0.5:6379', source: 'REDIS_URL' });
    expect(chooseRedis({ BOOKTAPE_REDIS_PORT: '17000' })).toEqual({ url: 'redis://127.0.0.1:17000', source: "the project's own Redis, BOOKTAPE_REDIS_PORT=17000" });
    expect(chooseRedis({})).toEqual({ url: 'redis://127.0.0.1:16379', source: "the project's own Redis, default port 16379 (REDIS_URL and BOOKTAPE_REDIS_PORT unset)" });
    expect(() => chooseRedis({ BOOKTAPE_REDIS_PORT: 'x' })).toThrow(/BOOKTAPE_REDIS_PORT/);
  });
});

describe('rollup --dry-run', () => {
  it('prints the job, where it would go, and one line per candidate asset-day', () => {
    expect(datesOf('2026-02-27', '2026-03-02')).toEqual(['2026-02-27', '2026-02-28', '2026-03-01', '2026-03-02']);
    const text = dryRunText({ venue: 'exchange-b', market: 'KXFILL-1', from: '2026-05-01', to: '2026-05-03' }, 'Redis redis://127.0.0.1:16379 (x), queue prefix booktape');
    expect(text.split('\n')).toEqual([
      'dry run, nothing enqueued: would enqueue on Redis redis://127.0.0.1:16379 (x), queue prefix booktape',
      'back-fill {"kind":"backfill","venue":"exchange-b","market":"KXFILL-1","from":"2026-05-01","to":"2026-05-03"}',
      'asset-days: up to 3 (asset KXFILL-1 × 3 day(s)); the worker rebuilds those with stored data, then later days whose carried state changed',
      'KXFILL-1 2026-05-01',
      'KXFILL-1 2026-05-02',
      'KXFILL-1 2026-05-03',
      '',
    ]);
    const a = dryRunText({ venue: 'exchange-a', market: '0x01', from: '2026-05-01', to: '2026-05-01' }, 'R');
    expect(a).toContain('per outcome token of 0x01');
    expect(a).toContain('* 2026-05-01');
  });
});
