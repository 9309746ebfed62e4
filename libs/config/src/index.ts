export * from './env.ts';
export * from './logger.ts';
export * from './paths.ts';
