export * from './config.ts';
export * from './ingestor.ts';
export * from './capture-pipeline.ts';
export * from './replay/replay.ts';
export * from './sink/sink.ts';
export * from './run.ts';
export * from './status-publisher.ts';
export * from './replay/import-capture.ts';
