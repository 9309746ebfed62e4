/**
 * Simulator throughput bench: the simulator runs in this process, a consumer in a child
 * process subscribes to every market on both venues and counts what arrives.
 *
 *   node --import tsx libs/simulator/src/bench.ts [--raw] [rate ...]   (default 50000 100000 200000)
 *
 * Prints, per requested rate, the events/s the simulator delivered and the consumer received.
 * --raw: the consumer only discards bytes (no websocket parsing), to find the simulator's limit.
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { startSimulator } from './simulator.ts';

const WINDOW_MS = 4000;

/**
 * A websocket client that does the handshake by hand and then only discards bytes: it costs
 * next to nothing, so the bench measures the simulator rather than a client's frame parsing.
 */
function rawClient(url: string, firstMessage: string, onBytes: (n: number) => void): void {
  const u = new URL(url);
  const sock = connect(Number(u.port), u.hostname);
  sock.on('connect', () => {
    sock.write(
      `GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
    const payload = Buffer.from(firstMessage);
    const mask = randomBytes(4);
    const len = payload.length;
    const head = len < 126 ? Buffer.from([0x81, 0x80 | len]) : Buffer.from([0x81, 0x80 | 126, len >> 8, len & 255]);
    const masked = Buffer.alloc(len);
    for (let i = 0; i < len; i++) masked[i] = payload[i]! ^ mask[i % 4]!;
    if (len >= 65536) throw new Error('subscribe message too long for this bench client');
    sock.write(Buffer.concat([head, mask, masked]));
  });
  sock.on('data', (d) => onBytes(d.length));
  sock.on('close', () => console.error('raw client closed', url));
}

async function consumer(urlA: string, urlB: string, tokens: string[], tickers: string[], connsA: number): Promise<void> {
  let events = 0;
  const per = Math.ceil(tokens.length / connsA);
  for (let i = 0; i < tokens.length; i += per) {
    const ws = new WebSocket(urlA);
    ws.on('open', () => ws.send(JSON.stringify({ assets_ids: tokens.slice(i, i + per), type: 'market' })));
    ws.on('message', (d: Buffer) => {
      // Count events without parsing: one "event_type" per event.
      let at = d.indexOf('"event_type"');
      while (at >= 0) {
        events++;
        at = d.indexOf('"event_type"', at + 12);
      }
    });
  }
  const wb = new WebSocket(urlB);
  wb.on('open', () => wb.send(JSON.stringify({ id: 1, cmd: 'subscribe', params: { channels: ['orderbook_delta'], market_tickers: tickers } })));
  wb.on('message', () => {
    events++;
  });
  setInterval(() => process.send?.({ events }), 250);
}

async function main(): Promise<void> {
  if (process.argv[2] === '--raw-consumer') {
    const [urlA, urlB, tokens, tickers] = process.argv.slice(3) as [string, string, string, string];
    let bytes = 0;
    const count = (n: number): void => {
      bytes += n;
    };
    rawClient(urlA, JSON.stringify({ assets_ids: tokens.split(','), type: 'market' }), count);
    rawClient(urlB, JSON.stringify({ id: 1, cmd: 'subscribe', params: { channels: ['orderbook_delta'], market_tickers: tickers.split(',') } }), count);
    setInterval(() => process.send?.({ events: bytes }), 250);
    return;
  }
  if (process.argv[2] === '--consumer') {
    const [urlA, urlB, tokens, tickers, conns] = process.argv.slice(3) as [string, string, string, string, string];
    await consumer(urlA, urlB, tokens.split(','), tickers.split(','), Number(conns));
    return;
  }
  const raw = process.argv[2] === '--raw';
  const rates = process.argv.slice(raw ? 3 : 2).map(Number);
  const sim = await startSimulator({ eventsPerSecond: 0, markets: { exchangeA: 100, exchangeB: 100 }, seed: 3 });
  const tokens = sim.markets.exchangeA.flatMap((m) => m.tokenIds);
  const tickers = sim.markets.exchangeB.map((m) => m.ticker);
  const child = fork(fileURLToPath(import.meta.url), [raw ? '--raw-consumer' : '--consumer', sim.urls.exchangeA, sim.urls.exchangeB, tokens.join(','), tickers.join(','), '2'], {
    execArgv: ['--import', 'tsx'],
  });
  let received = 0;
  child.on('message', (m: { events: number }) => {
    received = m.events;
  });
  await new Promise((r) => setTimeout(r, 1000));
  for (const rate of rates.length ? rates : [50_000, 100_000, 200_000]) {
    sim.setRate(rate);
    await new Promise((r) => setTimeout(r, 1000)); // warm up
    const s0 = sim.stats();
    const r0 = received;
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    await new Promise((r) => setTimeout(r, WINDOW_MS));
    const dt = (performance.now() - t0) / 1000;
    const s1 = sim.stats();
    const cpu = process.cpuUsage(cpu0);
    const sent = s1.exchangeA.events + s1.exchangeB.events - s0.exchangeA.events - s0.exchangeB.events;
    console.log(
      JSON.stringify({
        requested: rate,
        generatedPerSec: Math.round((s1.eventsGenerated - s0.eventsGenerated) / dt),
        sentPerSec: Math.round(sent / dt),
        [raw ? 'receivedMbPerSec' : 'receivedPerSec']: raw ? Number(((received - r0) / dt / 1e6).toFixed(1)) : Math.round((received - r0) / dt),
        framesPerSec: Math.round((s1.exchangeA.frames + s1.exchangeB.frames - s0.exchangeA.frames - s0.exchangeB.frames) / dt),
        mbPerSec: Number(((s1.exchangeA.bytes + s1.exchangeB.bytes - s0.exchangeA.bytes - s0.exchangeB.bytes) / dt / 1e6).toFixed(1)),
        simCpu: Number(((cpu.user + cpu.system) / 1e6 / dt).toFixed(2)),
      }),
    );
  }
  child.kill();
  await sim.close();
}

await main();
