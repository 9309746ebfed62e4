import type { Kafka } from 'kafkajs';
import type { AddressInfo } from 'node:net';
import { parseEnv, silentLogger } from '@booktape/config';
import type { Venue } from '@booktape/domain';
import { createIngestor, ingestorConfig, ingestorEnvSchema, type Ingestor } from '@booktape/ingestor';
import { createKafka } from '@booktape/messaging';
import { startSimulator, type Simulator, type SimulatorOptions } from '@booktape/simulator';
import { migrate, openClickHouse, type ClickHouse } from '@booktape/storage';
import { requireEnv, uniqueId } from '@booktape/testkit';
import { startTestApi, type TestApi } from '@booktape/api/testing';

/**
 * What the replay round trips (issue 25) share: the simulator → capture → store gives the
 * source (in the API's store); a second capture, pointed at the API's replay websocket the
 * way it is pointed at the venue, records a copy into another database. `venueEnv` gives a
 * capture its venue's settings for a websocket URL (the simulator's, or the replay's).
 */
export interface RoundTrip {
  t: TestApi;
  sim: Simulator;
  kafka: Kafka;
  source: Ingestor;
  sourceGroup: string;
  copyCh: ClickHouse;
  apiKey: string;
  /** The API's replay base, `ws://127.0.0.1:PORT/api/v1`. */
  apiWs: string;
  /** Starts the copy's capture (and sink) on `wsUrl`; `extra` adds settings. */
  startCopy(wsUrl: string, extra?: Record<string, string>): Promise<{ ingestor: Ingestor; group: string }>;
  close(): Promise<void>;
}

const log = silentLogger();

export async function startRoundTrip(o: { venue: Venue; sim: SimulatorOptions; copyDatabase: string; venueEnv: (sim: Simulator, wsUrl: string) => Record<string, string> }): Promise<RoundTrip> {
  const t = await startTestApi({ dataFloors: { 'exchange-a': null, 'exchange-b': null } });
  const apiKey = await t.newKey();
  const sim = await startSimulator(o.sim);
  const env = (prefix: string, group: string, wsUrl: string, extra: Record<string, string> = {}) => ({
    KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'),
    KAFKA_TOPIC_PREFIX: `${uniqueId(prefix)}.`,
    KAFKA_PARTITIONS: '2',
    SINK_GROUP_ID: group,
    CAPTURE_VENUES: o.venue,
    WORKER_ID: '4',
    ...o.venueEnv(sim, wsUrl),
    ...extra,
  });
  const sourceGroup = uniqueId('rt-src-g');
  const e = env('rt-src', sourceGroup, o.venue === 'exchange-a' ? sim.urls.exchangeA : sim.urls.exchangeB);
  const config = ingestorConfig(parseEnv(ingestorEnvSchema, e), e);
  const kafka = createKafka({ brokers: config.platform.kafka.brokers, clientId: `replay-round-trip-${o.venue}` }, log);
  const source = createIngestor({ config, kafka, ch: t.ch, log });
  await source.start();
  const copyCh = await openClickHouse({ database: o.copyDatabase, embeddedPath: t.ch.embeddedPath! });
  await migrate(copyCh);
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const copies: Ingestor[] = [];
  return {
    t,
    sim,
    kafka,
    source,
    sourceGroup,
    copyCh,
    apiKey,
    apiWs: `ws://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/api/v1`,
    async startCopy(wsUrl, extra = {}) {
      const group = uniqueId('rt-copy-g');
      const ce = env('rt-copy', group, wsUrl, extra);
      const ingestor = createIngestor({ config: ingestorConfig(parseEnv(ingestorEnvSchema, ce), ce), kafka, ch: copyCh, log });
      copies.push(ingestor);
      await ingestor.start();
      return { ingestor, group };
    },
    async close() {
      for (const c of copies) await c.stop();
      await source.stop();
      await sim.close();
      await t.close();
    },
  };
}
