import { describe, expect, it } from 'vitest';
import { BooktapeError } from './errors.ts';
import { Transport, type FetchLike } from './transport.ts';

/** A fetch that answers from a script, noting what it was asked. */
function scripted(answers: Array<() => Response>) {
  const asked: Array<{ url: string; headers: Record<string, string> }> = [];
  const fetch: FetchLike = async (url, init) => {
    asked.push({ url, headers: init.headers as Record<string, string> });
    const next = answers.shift();
    if (!next) throw new Error('no more answers');
    return next();
  };
  return { fetch, asked };
}
const json = (status: number, body: unknown, headers: Record<string, string> = {}) => () => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
const unavailable = json(503, { error: { code: 'service_unavailable', message: 'ClickHouse is unavailable, retry later' } }, { 'retry-after': '0' });
const retry = { maxRetries: 3, maxRetryDelayMs: 5000, baseDelayMs: 1 };

describe('Transport', () => {
  it('sends the key as a Bearer token, JSON accept, and gzip/br in Node', async () => {
    const s = scripted([json(200, { ok: true })]);
    const t = new Transport({ baseUrl: 'http://api.test:8080', apiKey: 'bt_live_k', fetch: s.fetch, retry });
    expect(await t.json(t.url('/api/v1/health'))).toEqual({ ok: true });
    expect(s.asked[0]).toEqual({ url: 'http://api.test:8080/api/v1/health', headers: { accept: 'application/json', authorization: 'Bearer bt_live_k', 'accept-encoding': 'gzip, br' } });
  });

  it('never sends a write twice: a POST or DELETE answered 503, or not answered, is thrown at once', async () => {
    const methods: string[] = [];
    const s = scripted([unavailable, json(200, { ok: 1 })]);
    const t = new Transport({ baseUrl: 'http://api.test', fetch: (u, init) => (methods.push(String(init.method)), s.fetch(u, init)), retry });
    expect(await t.json(t.url('/api/v1/keys'), { method: 'POST' }).catch((e: unknown) => e)).toMatchObject({ status: 503, code: 'service_unavailable' });
    expect(methods).toEqual(['POST']);
    let calls = 0;
    const down = new Transport({ baseUrl: 'http://api.test', fetch: async () => (calls++, Promise.reject(new TypeError('fetch failed'))), retry });
    await expect(down.json(down.url('/api/v1/keys/key_1'), { method: 'DELETE' })).rejects.toThrow('fetch failed');
    expect(calls).toBe(1);
  });

  it('retries a 503 as Retry-After says, then answers', async () => {
    const s = scripted([unavailable, unavailable, json(200, { ok: 1 })]);
    const t = new Transport({ baseUrl: 'http://api.test', fetch: s.fetch, retry });
    expect(await t.json(t.url('/x'))).toEqual({ ok: 1 });
    expect(s.asked).toHaveLength(3);
  });

  it('backs off without Retry-After, and gives up after maxRetries with the last error', async () => {
    const noHeader = json(503, { error: { code: 'service_unavailable', message: 'busy' } });
    const s = scripted([noHeader, noHeader, noHeader, noHeader, json(200, {})]);
    const t = new Transport({ baseUrl: 'http://api.test', fetch: s.fetch, retry });
    const e = await t.json(t.url('/x')).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(BooktapeError);
    expect(e).toMatchObject({ status: 503, code: 'service_unavailable', message: 'busy' });
    expect(s.asked).toHaveLength(4);
  });

  it('tries again when no answer came at all (a connection reset), up to maxRetries', async () => {
    const reset = () => {
      throw new TypeError('fetch failed');
    };
    const s = scripted([reset, reset, json(200, { ok: 1 })]);
    const t = new Transport({ baseUrl: 'http://api.test', fetch: s.fetch, retry });
    expect(await t.json(t.url('/x'))).toEqual({ ok: 1 });
    const down = scripted([reset, reset, reset, reset, reset]);
    const t2 = new Transport({ baseUrl: 'http://api.test', fetch: down.fetch, retry });
    await expect(t2.json(t2.url('/x'))).rejects.toThrow('fetch failed');
    expect(down.asked).toHaveLength(4);
  });

  it('does not retry other statuses; a body not in the API shape is an http_error', async () => {
    const s = scripted([() => new Response('<html>bad gateway</html>', { status: 502 })]);
    const t = new Transport({ baseUrl: 'http://api.test', fetch: s.fetch, retry });
    expect(await t.json(t.url('/x')).catch((x: unknown) => x)).toMatchObject({ status: 502, code: 'http_error', body: '<html>bad gateway</html>' });
    expect(s.asked).toHaveLength(1);
  });

  it('keeps a base URL path prefix (a reverse proxy) on API paths and Link targets', () => {
    const t = new Transport({ baseUrl: 'https://example.test/booktape/', fetch: scripted([]).fetch, retry });
    expect(t.url('/api/v1/exchange-a/market/list', [['prefix', '0x1']]).toString()).toBe('https://example.test/booktape/api/v1/exchange-a/market/list?prefix=0x1');
    const plain = new Transport({ baseUrl: 'http://127.0.0.1:8080/api/v1', fetch: scripted([]).fetch, retry });
    expect(plain.url('/api/v1/health').toString()).toBe('http://127.0.0.1:8080/api/v1/health');
  });
});

describe('Transport signals', () => {
  /** A fetch that waits until its signal aborts, as a real one on a slow answer does. */
  const hanging: FetchLike = (_url, init) => new Promise((_, reject) => init.signal?.addEventListener('abort', () => reject(init.signal?.reason), { once: true }));

  it('the client signal and the call signal each abort a call', async () => {
    const client = new AbortController();
    const t = new Transport({ baseUrl: 'http://api.test', fetch: hanging, retry, signal: client.signal });
    const call = new AbortController();
    const byCall = t.json(t.url('/x'), { signal: call.signal });
    call.abort(new Error('call gave up'));
    await expect(byCall).rejects.toThrow('call gave up');
    const byClient = t.json(t.url('/x'), { signal: new AbortController().signal });
    client.abort(new Error('client closed'));
    await expect(byClient).rejects.toThrow('client closed');
  });

  it('an abort during a Retry-After wait ends the wait', async () => {
    const s = scripted([json(429, { error: { code: 'rate_limited', message: 'slow down' } }, { 'retry-after': '5' })]);
    const t = new Transport({ baseUrl: 'http://api.test', fetch: s.fetch, retry });
    const call = new AbortController();
    const started = Date.now();
    const p = t.json(t.url('/x'), { signal: call.signal });
    setTimeout(() => call.abort(new Error('no more waiting')), 50);
    await expect(p).rejects.toThrow('no more waiting');
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
