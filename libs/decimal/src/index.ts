export * from './decimal.ts';
