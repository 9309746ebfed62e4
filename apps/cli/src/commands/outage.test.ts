import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runOutage } from './outage.ts';

/** runOutage against a stand-in server: what it prints for answers that are not the API's. */

let server: Server | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  server = undefined;
});

async function answering(status: number, body: string): Promise<string> {
  server = createServer((_req, res) => res.writeHead(status, { 'content-type': 'text/html' }).end(body));
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function captured() {
  const out = { stdout: '', stderr: '' };
  vi.spyOn(process.stdout, 'write').mockImplementation((s) => ((out.stdout += String(s)), true));
  vi.spyOn(process.stderr, 'write').mockImplementation((s) => ((out.stderr += String(s)), true));
  return out;
}

describe('booktape outage against something that is not the API', () => {
  it('says so, exit 1, when a 2xx answer is not outage JSON (list, add, remove)', async () => {
    const api = await answering(200, '<html>a proxy page</html>');
    for (const cmd of [
      { action: 'list', api, json: false },
      { action: 'add', api, venue: 'exchange-b', from: 0, to: 1000, reason: 'x' },
      { action: 'remove', api, id: 'out_0123456789abcdef' },
    ] as const) {
      const out = captured();
      expect(await runOutage(cmd, {})).toBe(1);
      expect(out.stdout).toBe('');
      expect(out.stderr).toContain("answered 200 but not with booktape's outage JSON");
      expect(out.stderr).toContain('is --api the booktape API?');
      vi.restoreAllMocks();
    }
  });

  it('says so when the JSON has another shape', async () => {
    const api = await answering(200, JSON.stringify({ data: [{ id: 1 }] }));
    const out = captured();
    expect(await runOutage({ action: 'list', api, json: false }, {})).toBe(1);
    expect(out.stderr).toContain("not with booktape's outage JSON");
  });

  it('prints the outages of a well-formed answer', async () => {
    const o = { id: 'out_0123456789abcdef', venue: 'exchange-b', start: '2026-03-01T10:00:00.000Z', end: '2026-03-01T12:00:00.000Z', reason: 'incident' };
    const api = await answering(200, JSON.stringify({ data: [o] }));
    const out = captured();
    expect(await runOutage({ action: 'list', api, json: false }, {})).toBe(0);
    expect(out.stdout).toBe(`${o.id}  ${o.venue}  ${o.start} → ${o.end}  ${o.reason}\n`);
    expect(out.stderr).toBe('');
  });
});
