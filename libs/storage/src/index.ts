export * from './clickhouse.ts';
export * from './migrations.ts';
export * from './raw-events.repository.ts';
export * from './gaps.repository.ts';
export * from './stream.ts';
export * from './market-data.repository.ts';
export * from './api-keys.repository.ts';
export * from './book-events.repository.ts';
