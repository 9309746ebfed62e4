export * from './worker.ts';
export * from './config.ts';
