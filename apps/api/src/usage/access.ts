import type { FastifyRequest } from 'fastify';
import { adminTokenMatcher } from '../http/auth.ts';
import { ApiError } from '../http/errors.ts';
import type { KeyService } from '../keys/keys.service.ts';

/**
 * Who may read usage and statistics (the interface leaves it open; docs/api.md).
 *
 * Per-user endpoints (`/usage`, `/user/{user_id}/requests/*`):
 * - `X-Admin-Token` (when ADMIN_TOKEN is set): any user; a wrong token is 401.
 * - `Authorization: Bearer <key>`: only the key's own user (another user_id is 403); an
 *   unknown key 401, a revoked one 403.
 * - Neither: 401 when ADMIN_TOKEN is set; allowed when it is not (like `/keys`, whose
 *   operations are open then too).
 *
 * Service-wide endpoints (`/stats/*`): operator only. With ADMIN_TOKEN set they need it
 * (none or wrong: 401; a Bearer key alone: 403); without it they are open.
 */

type Principal = { kind: 'admin' } | { kind: 'open' } | { kind: 'key'; userId: string };

export function usageAccess(adminToken: string | undefined, keys: Pick<KeyService, 'authenticate'>) {
  const matches = adminTokenMatcher(adminToken);
  const principals = new WeakMap<FastifyRequest, Principal>();

  function adminHeader(req: FastifyRequest): Principal | null {
    const given = req.headers['x-admin-token'];
    if (!matches || given === undefined) return null;
    if (typeof given !== 'string' || given === '' || !matches(given)) throw new ApiError(401, 'unauthorized', 'wrong X-Admin-Token');
    return { kind: 'admin' };
  }

  return {
    /** onRequest of per-user endpoints: who is asking (checked against the user_id by `check`). */
    async userScoped(req: FastifyRequest): Promise<void> {
      let p = adminHeader(req);
      if (!p && req.headers.authorization !== undefined) p = { kind: 'key', userId: (await keys.authenticate(req.headers.authorization)).user_id };
      if (!p && matches) throw new ApiError(401, 'unauthorized', "send the user's API key (Authorization: Bearer <key>) or X-Admin-Token");
      principals.set(req, p ?? { kind: 'open' });
    },

    /** onRequest of service-wide endpoints. */
    async adminOnly(req: FastifyRequest): Promise<void> {
      if (!matches) return;
      const p = adminHeader(req);
      if (p) return;
      if (req.headers.authorization !== undefined) throw new ApiError(403, 'forbidden', 'service-wide statistics need X-Admin-Token; an API key may read its own usage under /usage and /user/{user_id}/requests');
      throw new ApiError(401, 'unauthorized', 'missing X-Admin-Token header');
    },

    /** A key may read its own user only. */
    check(req: FastifyRequest, userId: string): void {
      const p = principals.get(req);
      if (p?.kind === 'key' && p.userId !== userId) throw new ApiError(403, 'forbidden', 'this API key belongs to another user: a key may read its own usage only', 'user_id');
    },
  };
}

export type UsageAccess = ReturnType<typeof usageAccess>;
