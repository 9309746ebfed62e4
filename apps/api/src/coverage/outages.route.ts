import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { OUTAGE_ID_PATTERN, type DeclaredOutage } from '@booktape/storage';
import { PUBLIC_SECURITY, adminGuard, adminSecurity } from '../http/auth.ts';
import { errors, invalidParameter, notFound } from '../http/errors.ts';
import { MISSING } from '../http/params.ts';
import type { Services } from '../services.ts';
import { outageAnswer, outageList } from './coverage.schemas.ts';
import { parseOutage, parseVenue } from './outage-params.ts';

export function outageJson(o: DeclaredOutage) {
  return { id: o.id, venue: o.venue, start_ms: o.start_ms, end_ms: o.end_ms, start: new Date(o.start_ms).toISOString(), end: new Date(o.end_ms).toISOString(), reason: o.reason, created_at: o.created_at };
}

const field = <T extends z.ZodType>(t: (opts: { error: (iss: { input: unknown }) => string }) => T, what: string) =>
  t({ error: (iss) => (iss.input === undefined ? MISSING : `must be ${what}`) });

/**
 * Declared outages: periods the operator knows a venue's data is missing or wrong. The list
 * is public (like the status page); declaring and removing need X-Admin-Token when
 * ADMIN_TOKEN is set (like /keys). They show in the coverage map and on the status page.
 */
export const outagesRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { outages } = services;
  const onRequest = adminGuard(services.config.adminToken);
  const security = adminSecurity(services.config.adminToken);

  app.get(
    '/outages',
    {
      schema: {
        summary: 'Declared outages (public)',
        tags: ['service'],
        security: PUBLIC_SECURITY,
        querystring: z.object({
          venue: z
            .string({ error: 'must be given once, as a string' })
            .optional()
            .transform((v, ctx) => {
              if (v === undefined) return undefined;
              const r = parseVenue(v);
              if (!r.ok) {
                ctx.addIssue({ code: 'custom', message: r.message });
                return z.NEVER;
              }
              return r.value;
            })
            .meta({ description: 'exchange-a or exchange-b; all venues when absent.' }),
        }),
        response: { 200: outageList, 400: errors[400], 503: errors[503] },
      },
    },
    async (req) => {
      const list = await outages.list({ ...(req.query.venue ? { venue: req.query.venue } : {}), limit: 1000 });
      return { data: list.map(outageJson), total: list.length };
    },
  );

  app.post(
    '/outages',
    {
      schema: {
        summary: 'Declare an outage of a venue (admin)',
        description: 'JSON body. from / to: ISO 8601 with a zone, a UTC date (its midnight), or Unix seconds / milliseconds; to is exclusive and must be after from.',
        tags: ['service'],
        security,
        body: z.object({
          venue: field((o) => z.string(o), 'exchange-a or exchange-b').meta({ description: 'exchange-a (a) or exchange-b (b).', example: 'exchange-a' }),
          from: field((o) => z.union([z.string(), z.number()], o), 'a time').meta({ description: 'Start (inclusive).', example: '2026-03-01T12:00:00Z' }),
          to: field((o) => z.union([z.string(), z.number()], o), 'a time').meta({ description: 'End (exclusive).', example: '2026-03-01T13:30:00Z' }),
          reason: field((o) => z.string(o), 'a text').meta({ description: `Why: shown to users. 1 to 500 characters.`, example: 'venue incident: order book feed down' }),
        }),
        response: { 200: outageAnswer.describe('The outage as declared, with its id.'), ...errors },
      },
      onRequest,
    },
    async (req) => {
      const r = parseOutage(req.body);
      if (!r.ok) throw invalidParameter(r.field, r.message);
      const rec = await outages.add(r.value);
      req.log.info({ outage: rec }, 'outage declared');
      return { success: true, data: outageJson(rec) };
    },
  );

  app.delete(
    '/outages/:id',
    {
      schema: {
        summary: 'Remove a declared outage (admin)',
        tags: ['service'],
        security,
        params: z.object({
          id: z
            .string()
            .regex(OUTAGE_ID_PATTERN, { error: 'must be an outage id as returned by POST /outages (out_ + 16 hex digits)' })
            .meta({ description: 'The id from POST /outages or GET /outages.' }),
        }),
        response: { 200: outageAnswer.describe('The outage that was removed.'), ...errors },
      },
      onRequest,
    },
    async (req) => {
      const rec = await outages.remove(req.params.id);
      if (!rec) throw notFound(`no declared outage ${req.params.id}`);
      req.log.info({ outage: rec }, 'outage removed');
      return { success: true, data: outageJson(rec) };
    },
  );
};
