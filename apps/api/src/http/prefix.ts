/** The versioned root of the API: every route lives under it but the status page and /metrics. */
export const API_PREFIX = '/api/v1';
