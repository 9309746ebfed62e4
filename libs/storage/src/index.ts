export * from './clickhouse.ts';
export * from './migrations.ts';
export * from './raw-events.repository.ts';
export * from './gaps.repository.ts';
