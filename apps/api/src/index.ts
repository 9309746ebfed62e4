export * from './app.ts';
export * from './api.ts';
export * from './composition.ts';
export * from './config.ts';
export * from './redis.ts';
export type { ApiDeps, Probe, ProbeResult, Services } from './services.ts';
export { ApiError, ERROR_CODES, type ErrorCode } from './http/errors.ts';
export { API_KEY_PREFIX, hashApiKey } from './keys/keys.service.ts';
export type { MonitoringStatus } from './monitoring/index.ts';
