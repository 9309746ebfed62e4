export * from './kafka.ts';
