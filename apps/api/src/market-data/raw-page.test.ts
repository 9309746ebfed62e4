import { describe, expect, it } from 'vitest';
import { StreamBusyError, StreamOwnerBusyError } from '@booktape/storage';
import { ApiError, TooManyConcurrentError } from '../http/errors.ts';
import { streamSessionError } from './raw-page.ts';

describe('a stream session that could not be had, as the answer says it', () => {
  it("the key's own share in use: 429 too_many_concurrent_requests naming the streams", () => {
    const e = streamSessionError(new StreamOwnerBusyError(2, 4));
    expect(e).toBeInstanceOf(TooManyConcurrentError);
    expect((e as TooManyConcurrentError).statusCode).toBe(429);
    expect((e as TooManyConcurrentError).concurrency).toEqual({ limit: 'stream_sessions', allowed: 2, retry_after_seconds: 1 });
    expect((e as Error).message).toMatch(/2 raw-data pages streaming.*4 stream sessions/);
  });

  it('every session held by others for the whole wait: 503 that says so, not "ClickHouse is unavailable"', () => {
    const e = streamSessionError(new StreamBusyError(10_000, 4)) as ApiError;
    expect(e).toBeInstanceOf(ApiError);
    expect(e.statusCode).toBe(503);
    expect(e.code).toBe('service_unavailable');
    expect(e.message).toBe('all 4 raw-data stream sessions of this API process stayed busy for 10 s (other requests are reading through them); retry later');
  });

  it('anything else is left as it is', () => {
    const other = new Error('x');
    expect(streamSessionError(other)).toBe(other);
  });
});
