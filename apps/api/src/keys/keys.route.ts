import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { adminGuard, adminSecurity } from '../http/auth.ts';
import { errors, notFound } from '../http/errors.ts';
import { q } from '../http/params.ts';
import type { Services } from '../services.ts';
import { keyCreated, keyList, keyRevoked } from './keys.schemas.ts';

/** API key management: for the operator's dashboard backend (no Bearer key). */
export const keysRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { keys, config } = services;
  const onRequest = adminGuard(config.adminToken);
  const security = adminSecurity(config.adminToken);
  const userId = () => q.text('Owner of the keys.', 128);

  app.post(
    '/keys',
    {
      schema: {
        summary: 'Create an API key (the full key is shown only in this answer)',
        tags: ['keys'],
        security,
        querystring: z.object({ name: q.text('A label for the key.', 100), user_id: userId() }),
        response: { 200: keyCreated, ...errors },
      },
      onRequest,
    },
    async (req) => {
      const { record, apiKey } = await keys.create(req.query.user_id, req.query.name);
      return {
        success: true,
        data: { key_id: record.key_id, api_key: apiKey, user_id: record.user_id, name: record.name, created_at: record.created_at },
      };
    },
  );

  app.get(
    '/keys',
    {
      schema: {
        summary: "A user's active API keys (never the keys themselves)",
        tags: ['keys'],
        security,
        querystring: z.object({ user_id: userId() }),
        response: { 200: keyList, ...errors },
      },
      onRequest,
    },
    async (req) => {
      const items = await keys.listActive(req.query.user_id);
      return {
        user_id: req.query.user_id,
        api_keys: items.map((k) => ({ id: k.key_id, name: k.name, status: k.status, created_at: k.created_at, last_used_at: k.last_used_at })),
        total: items.length,
      };
    },
  );

  app.delete(
    '/keys/:key_id',
    {
      schema: {
        summary: 'Revoke an API key (refused from then on with 403)',
        tags: ['keys'],
        security,
        params: z.object({
          key_id: z
            .string()
            .regex(/^key_[0-9a-f]{24}$/, { error: 'must be a key id as returned by POST /keys (key_ + 24 hex digits)' })
            .meta({ description: 'The key_id from POST /keys.' }),
        }),
        querystring: z.object({ user_id: userId() }),
        response: { 200: keyRevoked, ...errors },
      },
      onRequest,
    },
    async (req) => {
      const rec = await keys.revoke(req.query.user_id, req.params.key_id);
      if (!rec) throw notFound(`no key ${req.params.key_id} for this user`);
      return { success: true, data: { key_id: rec.key_id, status: rec.status, revoked_at: rec.revoked_at } };
    },
  );
};
