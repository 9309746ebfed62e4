import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { ApiKeyRecord } from '@booktape/storage';
import { ApiError } from './errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The key that authenticated this request (historical-data routes). */
    apiKey: ApiKeyRecord | null;
  }
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/**
 * A check of a given secret against the admin token, in constant time: both sides are
 * digested first, so the lengths are equal and the time does not depend on the token.
 * Null when no token is configured.
 */
export function adminTokenMatcher(adminToken: string | undefined): ((given: string) => boolean) | null {
  if (adminToken === undefined) return null;
  const expected = digest(adminToken);
  return (given) => timingSafeEqual(digest(given), expected);
}

/** onRequest of the historical-data routes: a valid Bearer key, kept on the request. */
export function requireKeyHook(keys: { authenticate(header: string | undefined): Promise<ApiKeyRecord> }) {
  return async (req: FastifyRequest): Promise<void> => {
    req.apiKey = await keys.authenticate(req.headers.authorization);
  };
}

/** When ADMIN_TOKEN is configured, the operator's routes (`/keys`, …) need it in X-Admin-Token. */
export function adminGuard(adminToken: string | undefined) {
  const matches = adminTokenMatcher(adminToken);
  return async (req: FastifyRequest): Promise<void> => {
    if (!matches) return;
    const given = req.headers['x-admin-token'];
    if (typeof given !== 'string' || given === '') throw new ApiError(401, 'unauthorized', 'missing X-Admin-Token header');
    if (!matches(given)) throw new ApiError(401, 'unauthorized', 'wrong X-Admin-Token');
  };
}

/** OpenAPI security requirements (schemes in http/openapi.ts): a list of alternatives; `{}` is "none needed". */
export type Security = Array<Record<string, string[]>>;

/** OpenAPI security of the historical-data routes (requireKey): a Bearer API key. */
export const KEY_SECURITY: Security = [{ bearerAuth: [] }];

/** OpenAPI security of the routes anyone may call (health, status, lookup, the outage list, the Stripe webhook). */
export const PUBLIC_SECURITY: Security = [];

/** OpenAPI security of the admin routes: the token, when one is configured; open otherwise. */
export const adminSecurity = (adminToken: string | undefined): Security => (adminToken ? [{ adminToken: [] }] : PUBLIC_SECURITY);
