import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLogger, untilSignal } from '@booktape/config';
import { startSimulator } from '@booktape/simulator';

export interface SimulateOptions {
  port: number;
  rate: number;
  marketsA: number;
  marketsB: number;
  seed: number;
}

/** The venue simulator alone, with the environment lines that point capture at it. */
export async function runSimulate(opts: SimulateOptions): Promise<number> {
  const log = createLogger('simulator');
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyFile = path.join(mkdtempSync(path.join(tmpdir(), 'booktape-sim-')), 'kalshi-key.pem');
  writeFileSync(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), { mode: 0o600 });
  const sim = await startSimulator({
    port: opts.port,
    eventsPerSecond: opts.rate,
    seed: opts.seed,
    markets: { exchangeA: opts.marketsA, exchangeB: opts.marketsB },
    kalshiKeyId: 'simulator-key',
    kalshiPublicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  });
  const lines = [
    `EXCHANGE_A_WS_URL=${sim.urls.exchangeA}`,
    `EXCHANGE_A_GAMMA_URL=${sim.urls.gamma}`,
    `EXCHANGE_B_WS_URL=${sim.urls.exchangeB}`,
    `EXCHANGE_B_TICKERS=${sim.markets.exchangeB.map((m) => m.ticker).join(',')}`,
    `EXCHANGE_B_API_KEY_ID=simulator-key`,
    `EXCHANGE_B_PRIVATE_KEY_FILE=${keyFile}`,
  ];
  process.stdout.write(`venue simulator running at ${opts.rate} events/s; point capture at it with:\n${lines.map((l) => `  ${l}`).join('\n')}\n`);
  const timer = setInterval(() => {
    const s = sim.stats();
    log.info({ eventsGenerated: s.eventsGenerated, eventsPerSecond: s.eventsPerSecond }, 'simulator stats');
  }, 10_000);
  return untilSignal(log, async () => {
    clearInterval(timer);
    await sim.close();
  });
}
