export * from './env.ts';
export * from './logger.ts';
export * from './paths.ts';
export * from './platform.ts';
export * from './lifecycle.ts';
