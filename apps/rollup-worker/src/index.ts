export * from './worker.ts';
export * from './roller.ts';
export * from './config.ts';
