export * from './observation.ts';
export * from './book-engine.ts';
export * from './bucketing.ts';
export { MAX_PRICE_DECIMALS, msFromText } from './fixed-point.ts';
export * from './bucket-codec.ts';
export * from './bucket-columns.ts';
export * from './bucket-bytes.ts';
export * from './rollup.ts';
export * from './checks.ts';
