export * from './normalise.types.ts';
