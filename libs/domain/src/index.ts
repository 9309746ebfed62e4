export * from './records.ts';
export * from './ids.ts';
export * from './catalogue.ts';
export * from './csv.ts';
export * from './single-flight.ts';
export * from './u64-text.ts';
