export * from './kafka.ts';
export * from './rollup-queue.ts';
