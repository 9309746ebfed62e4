import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { uniqueId } from '@booktape/testkit';
import { ingestorReportKeys, writeRollupWorkerBeat, type IngestorReport } from '@booktape/messaging';
import { deleteRedisPrefix, startTestApi, type TestApi } from '../testing.ts';

/**
 * The public status page in a real browser (Debian's chromium, driven by playwright-core;
 * `npm test` installs chromium when /usr/bin/chromium is missing): an API on a real port,
 * two ingestor reports in Redis (one process live with exchange A connected and fresh, one
 * that stopped reporting while it captured exchange B), and the page must show each
 * venue's state. The screenshot goes to test-output/status-page.png.
 */

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
const SCREENSHOT = path.join(REPO_ROOT, 'test-output', 'status-page.png');

const queuePrefix = uniqueId('bt-page');
let t: TestApi;
let base: string;
let browser: Browser;

function report(o: { instance: string; worker: number; roles: IngestorReport['roles']; agoMs: number; venue: IngestorReport['capture']; sink: IngestorReport['sink'] }): IngestorReport {
  const at = Date.now() - o.agoMs;
  return {
    v: 1,
    instance: o.instance,
    worker_id: o.worker,
    roles: o.roles,
    started_at: new Date(at - 3_600_000).toISOString(),
    published_at: new Date(at).toISOString(),
    interval_ms: 5000,
    capture: o.venue,
    sink: o.sink,
  };
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: \`npm test\` installs Debian's chromium (or run: apt-get install -y chromium)`);
  }
  t = await startTestApi({ rollupQueuePrefix: queuePrefix });
  const keys = ingestorReportKeys(queuePrefix);
  const now = Date.now();
  const live = report({
    instance: 'page-test-w1',
    worker: 1,
    roles: ['capture', 'sink'],
    agoMs: 1500,
    venue: {
      venues: [
        { venue: 'exchange-a', enabled: true, resolving: false, markets: 120, connections: 3, connected: 3, reconnects: 2, last_event_at: new Date(now - 800).toISOString(), records_total: 1_250_000, events_per_second: 412.6, frames_total: 900_000, dead_letters_total: 0 },
        { venue: 'exchange-b', enabled: false, resolving: false, markets: 0, connections: 0, connected: 0, reconnects: 0, last_event_at: null, records_total: 0, events_per_second: 0, frames_total: 0, dead_letters_total: 0 },
      ],
      producer_backlog: 12,
      producer_errors: 0,
    },
    sink: {
      group_id: 'booktape-sink',
      paused: false,
      stored_total: 1_249_000,
      stored_per_second: 405.2,
      last_stored_at: new Date(now - 300).toISOString(),
      insert_failures: 0,
      dead_lettered: 0,
      kafka: { ok: true, checked_at: new Date(now - 1500).toISOString(), lag: 37, lag_by_venue: { 'exchange-a': 37, 'exchange-b': 0 } },
    },
  });
  // Worker 2 captured exchange B, then stopped reporting two minutes ago.
  const stale = report({
    instance: 'page-test-w2',
    worker: 2,
    roles: ['capture'],
    agoMs: 120_000,
    venue: {
      venues: [{ venue: 'exchange-b', enabled: true, resolving: false, markets: 40, connections: 1, connected: 1, reconnects: 0, last_event_at: new Date(now - 121_000).toISOString(), records_total: 80_000, events_per_second: 35, frames_total: 80_000, dead_letters_total: 0 }],
      producer_backlog: 0,
      producer_errors: 0,
    },
    sink: null,
  });
  for (const r of [live, stale]) {
    await t.redis.set(keys.report(r.instance), JSON.stringify(r), 'PX', 600_000);
    await t.redis.zadd(keys.index, Date.parse(r.published_at), r.instance);
  }
  // A live rollup worker (a long beat interval keeps it live for the whole file).
  await writeRollupWorkerBeat(t.redis, queuePrefix, { v: 1, instance: 'page-test-rollup', started_at: new Date(now - 60_000).toISOString(), published_at: new Date(now).toISOString(), interval_ms: 600_000, concurrency: 2 });
  const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = address;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
});

afterAll(async () => {
  await browser?.close();
  if (t) await deleteRedisPrefix(t.redis, `${queuePrefix}:`);
  await t?.close();
});

describe('status page in headless Chromium', () => {
  it("shows each venue's state, freshness and rate, the pipeline and the stores, from nothing but the page itself", async () => {
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 }, javaScriptEnabled: false });
    const page = await context.newPage();
    const requested: string[] = [];
    page.on('request', (r) => requested.push(r.url()));
    const res = await page.goto(`${base}/status`, { waitUntil: 'load' });
    expect(res?.status()).toBe(200);
    expect(res?.headers()['content-type']).toBe('text/html; charset=utf-8');

    await expect.poll(() => page.title()).toBe('booktape status: Partially degraded');
    const venueA = page.locator('tr.venue[data-venue="exchange-a"]');
    const venueB = page.locator('tr.venue[data-venue="exchange-b"]');
    expect(await venueA.locator('th').innerText()).toBe('Exchange A (Polymarket)');
    expect(await venueA.locator('td.state').innerText()).toBe('Operational');
    expect(await venueA.locator('td.detail').innerText()).toBe('3 of 3 connections up');
    expect(await venueA.locator('td.freshness').innerText()).toMatch(/^\d+ s ago$/);
    expect(await venueA.locator('td.rate').innerText()).toBe('412.6');
    expect(await venueB.locator('th').innerText()).toBe('Exchange B (Kalshi)');
    expect(await venueB.locator('td.state').innerText()).toBe('Down');
    expect(await venueB.locator('td.detail').innerText()).toBe('its capture process stopped reporting 2 min ago');
    expect(await venueB.locator('td.freshness').innerText()).toBe('2 min ago');

    const overall = page.locator('#overall');
    expect(await overall.getAttribute('data-status')).toBe('degraded');
    expect(await overall.innerText()).toContain('Exchange B (Kalshi): its capture process stopped reporting');
    expect(await page.locator('tr[data-component="kafka"] td.state').innerText()).toBe('Ok');
    expect(await page.locator('tr[data-component="kafka"]').innerText()).toContain('consumer lag 37');
    expect(await page.locator('tr[data-component="sink"]').innerText()).toContain('405.2 records/s');
    expect(await page.locator('tr[data-component="rollup"] td.state').innerText()).toBe('Ok');
    expect(await page.locator('tr[data-store="clickhouse"] td.state').innerText()).toBe('Operational');
    expect(await page.locator('tr[data-store="redis"] td.state').innerText()).toBe('Operational');
    expect(await page.locator('tr.process[data-state="stale"]').innerText()).toContain('worker 2 (capture)');
    // Self-contained: the page asked for nothing but itself (and maybe the browser's favicon).
    expect(requested.filter((u) => !u.endsWith('/favicon.ico'))).toEqual([`${base}/status`]);
    // It refreshes itself without script.
    expect(await page.locator('meta[http-equiv="refresh"]').getAttribute('content')).toBe('10');

    mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    console.log(`status page screenshot: ${SCREENSHOT}`);
    expect(existsSync(SCREENSHOT)).toBe(true);
    await context.close();
  });
});
