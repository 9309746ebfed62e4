export * from './kafka.ts';
export * from './consumer-lag.ts';
export * from './message-codec.ts';
export * from './rollup-keys.ts';
export * from './rollup-queue.ts';
export * from './rollup-state.ts';
export * from './status-report.ts';
export * from './rollup-worker-liveness.ts';
