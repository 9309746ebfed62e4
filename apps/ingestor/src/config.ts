import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { envBool, envInt, envList, envOptional, envString, envUrl, platformConfig, platformEnvSchema, type PlatformConfig } from '@booktape/config';
import { VENUES, type Venue } from '@booktape/domain';
import { RAW_VALUE_FORMATS, type RawValueFormat } from '@booktape/messaging';
import { asVenue } from '@booktape/venues';

export const ingestorEnvSchema = platformEnvSchema.extend({
  /** Which roles this process runs: capture (venues → Kafka), sink (Kafka → ClickHouse). */
  INGESTOR_ROLES: envList(['capture', 'sink']).refine((l) => l.every((r) => r === 'capture' || r === 'sink'), 'must list capture and/or sink'),
  CAPTURE_VENUES: envList([...VENUES]).refine((l) => l.every((v) => asVenue(v) !== null), `must list ${VENUES.join(' and/or ')}`),
  SINK_GROUP_ID: envString('booktape-sink'),
  KAFKA_PARTITIONS: envInt(8, 1, 256),
  /**
   * How capture and replay write raw Kafka values: `binary` (docs/rules/kafka-records.md), or
   * `json`, the JSON array of releases before the binary value, for a rollback to one of them
   * (they read only that). The sink reads both either way.
   */
  KAFKA_RAW_VALUE_FORMAT: z.preprocess(
    (v) => (typeof v === 'string' ? (v.trim() === '' ? undefined : v.trim().toLowerCase()) : v),
    z.enum(RAW_VALUE_FORMATS as [RawValueFormat, ...RawValueFormat[]], { message: 'must be binary or json (json: the JSON array earlier releases read, for a rollback)' }).default('binary'),
  ) as unknown as z.ZodType<RawValueFormat>,
  /** How long a crashed sink holds its partitions before the group reassigns them. */
  SINK_SESSION_TIMEOUT_MS: envInt(30_000, 6_000, 300_000),
  /** Inserts of old records (a replay, an import) from a sink that caught up start at most once per this long per venue; 0: never paced. */
  SINK_PACED_INSERT_MS: envInt(1000, 0, 10_000),

  EXCHANGE_A_WS_URL: envUrl('wss://ws-subscriptions-clob.polymarket.com/ws/market', ['ws', 'wss']),
  EXCHANGE_A_GAMMA_URL: envUrl('https://gamma-api.polymarket.com', ['http', 'https']),
  /** Explicit outcome token ids; when empty, markets are discovered from the metadata API. */
  EXCHANGE_A_TOKENS: envList([]),
  /** Explicit condition ids, resolved to their tokens through the metadata API. */
  EXCHANGE_A_MARKETS: envList([]),
  EXCHANGE_A_DISCOVER_LIMIT: envInt(100, 0, 100_000),
  EXCHANGE_A_TOKENS_PER_CONNECTION: envInt(200, 1, 1000),
  /** Seconds between refreshes of the market catalogue from the metadata API (sink role); 0 = off. */
  EXCHANGE_A_CATALOGUE_REFRESH_SECONDS: envInt(900, 0, 7 * 86_400),

  EXCHANGE_B_WS_URL: envUrl('wss://api.elections.kalshi.com/trade-api/ws/v2', ['ws', 'wss']),
  EXCHANGE_B_TICKERS: envList([]),
  EXCHANGE_B_API_KEY_ID: envOptional(),
  /** RSA private key (PEM) for request signing, inline or as a file path. */
  EXCHANGE_B_PRIVATE_KEY: envOptional(),
  EXCHANGE_B_PRIVATE_KEY_FILE: envOptional(),

  /** Capture files for replay (docs/rules/capture-files.md); unset = off. */
  CAPTURE_FILE_DIR: envOptional(),
  CAPTURE_FILE_ROTATE_MB: envInt(256, 1, 1_000_000),
  CAPTURE_FILE_ROTATE_MINUTES: envInt(60, 1, 100_000),
  CAPTURE_FILE_GZIP: envBool(true),
});

export type IngestorEnv = z.infer<typeof ingestorEnvSchema>;

export interface IngestorConfig {
  platform: PlatformConfig;
  roles: { capture: boolean; sink: boolean };
  venues: Record<Venue, boolean>;
  sinkGroupId: string;
  sinkSessionTimeoutMs: number;
  sinkPacedInsertMs: number;
  kafkaPartitions: number;
  /** How capture and replay write raw Kafka values (KAFKA_RAW_VALUE_FORMAT). */
  rawValueFormat: RawValueFormat;
  exchangeA: { wsUrl: string; gammaUrl: string; tokens: string[]; markets: string[]; discoverLimit: number; tokensPerConnection: number; catalogueRefreshMs: number };
  exchangeB: { wsUrl: string; tickers: string[]; credentials: { keyId: string; privateKeyPem: string } | null };
  captureFiles: { dir: string; rotateBytes: number; rotateMs: number; gzip: boolean } | null;
}

export function ingestorConfig(env: IngestorEnv, rawEnv: NodeJS.ProcessEnv = process.env): IngestorConfig {
  const platform = platformConfig(env, rawEnv);
  let pem = env.EXCHANGE_B_PRIVATE_KEY;
  if (!pem && env.EXCHANGE_B_PRIVATE_KEY_FILE) {
    try {
      pem = readFileSync(env.EXCHANGE_B_PRIVATE_KEY_FILE, 'utf8');
    } catch (e) {
      throw new Error(`EXCHANGE_B_PRIVATE_KEY_FILE: cannot read ${env.EXCHANGE_B_PRIVATE_KEY_FILE}: ${(e as Error).message}`);
    }
  }
  return {
    platform,
    roles: { capture: env.INGESTOR_ROLES.includes('capture'), sink: env.INGESTOR_ROLES.includes('sink') },
    venues: Object.fromEntries(VENUES.map((v) => [v, env.CAPTURE_VENUES.includes(v)])) as Record<Venue, boolean>,
    sinkGroupId: env.SINK_GROUP_ID,
    sinkSessionTimeoutMs: env.SINK_SESSION_TIMEOUT_MS,
    sinkPacedInsertMs: env.SINK_PACED_INSERT_MS,
    kafkaPartitions: env.KAFKA_PARTITIONS,
    rawValueFormat: env.KAFKA_RAW_VALUE_FORMAT,
    exchangeA: {
      wsUrl: env.EXCHANGE_A_WS_URL!,
      gammaUrl: env.EXCHANGE_A_GAMMA_URL!,
      tokens: env.EXCHANGE_A_TOKENS,
      markets: env.EXCHANGE_A_MARKETS,
      discoverLimit: env.EXCHANGE_A_DISCOVER_LIMIT,
      tokensPerConnection: env.EXCHANGE_A_TOKENS_PER_CONNECTION,
      catalogueRefreshMs: env.EXCHANGE_A_CATALOGUE_REFRESH_SECONDS * 1000,
    },
    exchangeB: {
      wsUrl: env.EXCHANGE_B_WS_URL!,
      tickers: env.EXCHANGE_B_TICKERS.map((t) => t.toUpperCase()),
      credentials: env.EXCHANGE_B_API_KEY_ID && pem ? { keyId: env.EXCHANGE_B_API_KEY_ID, privateKeyPem: pem } : null,
    },
    captureFiles: env.CAPTURE_FILE_DIR
      ? {
          dir: path.resolve(env.CAPTURE_FILE_DIR),
          rotateBytes: env.CAPTURE_FILE_ROTATE_MB * 1024 * 1024,
          rotateMs: env.CAPTURE_FILE_ROTATE_MINUTES * 60_000,
          gzip: env.CAPTURE_FILE_GZIP,
        }
      : null,
  };
}
