export * from './records.ts';
export * from './ids.ts';
