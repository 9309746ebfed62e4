export * from './app.ts';
export * from './api.ts';
export * from './config.ts';
export * from './redis.ts';
export { ApiError, ERROR_CODES, type ErrorCode } from './errors.ts';
export { API_KEY_PREFIX, hashApiKey } from './keys.service.ts';
