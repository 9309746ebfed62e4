import type { Kafka } from 'kafkajs';
import type { Logger } from '@booktape/config';
import { VENUES, type Venue } from '@booktape/domain';
import { createRawProducer, ensureTopics, topicNames, type BatchingProducer, type Topics } from '@booktape/messaging';
import type { ClickHouse } from '@booktape/storage';
import { CaptureFileWriter } from '@booktape/venues';
import { CapturePipeline } from './capture-pipeline.ts';
import { buildCaptureSources, type CaptureSource } from './capture-sources.ts';
import { createCatalogueSync, type CatalogueSync } from './catalogue/catalogue-sync.ts';
import type { IngestorConfig } from './config.ts';
import { createSink, type Sink, type StoredPartition } from './sink/sink.ts';

export interface IngestorDeps {
  config: IngestorConfig;
  kafka: Kafka;
  /** Needed by the sink role only. */
  ch: ClickHouse | null;
  log: Logger;
  onStored?: (partitions: StoredPartition[]) => Promise<void> | void;
}

/**
 * The ingestor: capture (venue websockets → Kafka) and sink (Kafka → ClickHouse), either or
 * both per process. `stop` runs once: capture stops first, the producer flushes what it
 * buffered, then the sink leaves its group, then files close.
 */
export function createIngestor(deps: IngestorDeps) {
  const { config, kafka, log } = deps;
  const topics: Topics = topicNames(config.platform.kafka.topicPrefix);
  let producer: BatchingProducer | undefined;
  let pipeline: CapturePipeline | undefined;
  let sink: Sink | undefined;
  let catalogue: CatalogueSync | undefined;
  let sources: CaptureSource[] = [];
  const files: Partial<Record<Venue, CaptureFileWriter>> = {};
  let stopping: Promise<void> | undefined;
  let capturing: Promise<void> | undefined;
  let sinkJoined: Promise<void> = Promise.resolve();

  return {
    topics,
    get pipeline() {
      return pipeline;
    },
    get sink() {
      return sink;
    },
    get sources() {
      return sources;
    },
    get catalogue() {
      return catalogue;
    },
    /** Resolves once the sink has joined its consumer group (at once without the sink role). */
    get sinkJoined() {
      return sinkJoined;
    },
    async start(): Promise<void> {
      await ensureTopics(kafka, topics, config.kafkaPartitions);
      if (config.roles.sink) {
        if (!deps.ch) throw new Error('the sink role needs ClickHouse');
        sink = createSink({ kafka, topics, ch: deps.ch, log: log.child({ role: 'sink' }), groupId: config.sinkGroupId, options: { sessionTimeoutMs: config.sinkSessionTimeoutMs, pacedInsertMs: config.sinkPacedInsertMs, partitionsConcurrently: 2 * config.kafkaPartitions }, ...(deps.onStored ? { onStored: deps.onStored } : {}) });
        // Not awaited: after a crash Kafka holds the dead process's slot in the group until
        // its session times out (~30 s); capture (and the API, in the launcher) need not
        // wait for that. The sink joins when it can and reports `joining` meanwhile.
        sinkJoined = sink.start();
        // The market catalogue needs ClickHouse, which the sink role has; runs in the background.
        if (config.exchangeA.catalogueRefreshMs > 0) {
          catalogue = createCatalogueSync({ ch: deps.ch, log: log.child({ role: 'catalogue' }), options: { gammaUrl: config.exchangeA.gammaUrl, intervalMs: config.exchangeA.catalogueRefreshMs } });
          catalogue.start();
        }
      }
      if (config.roles.capture) {
        // Kept whole in the capture file (when on); the dead-letter topic gets the reason
        // and the head of the value, which is all that fits.
        producer = createRawProducer(kafka, log.child({ role: 'producer' }), topics);
        await producer.connect();
        if (config.captureFiles) {
          for (const venue of VENUES) {
            if (!config.venues[venue]) continue;
            files[venue] = new CaptureFileWriter({
              dir: config.captureFiles.dir,
              prefix: `${venue}-w${config.platform.workerId}`,
              rotateBytes: config.captureFiles.rotateBytes,
              rotateMs: config.captureFiles.rotateMs,
              gzip: config.captureFiles.gzip,
            });
          }
        }
        pipeline = new CapturePipeline({ producer, topics, workerId: config.platform.workerId, log: log.child({ role: 'capture' }), files, rawValueFormat: config.rawValueFormat });
        sources = await buildCaptureSources(config, pipeline, log.child({ role: 'capture' }));
        for (const s of sources) await s.start();
      }
    },
    /** Stops capture only: sockets closed, everything buffered produced, files closed. */
    stopCapture(): Promise<void> {
      capturing ??= (async () => {
        for (const s of sources) await s.stop().catch((e: Error) => log.warn({ err: e.message }, 'capture stop failed'));
        await producer?.disconnect().catch((e: Error) => log.warn({ err: e.message }, 'producer flush failed'));
        for (const f of Object.values(files)) await f?.close().catch(() => undefined);
      })();
      return capturing;
    },
    stop(): Promise<void> {
      stopping ??= (async () => {
        await this.stopCapture();
        await catalogue?.stop();
        await sink?.stop();
      })();
      return stopping;
    },
    health() {
      return {
        sink: sink?.health() ?? null,
        catalogue: catalogue?.status() ?? null,
        capture: pipeline ? { counters: pipeline.counters, producer: { buffered: producer?.buffered ?? 0, ...producer?.stats }, sources: sources.map((s) => s.status()) } : null,
      };
    },
  };
}

export type Ingestor = ReturnType<typeof createIngestor>;
