import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { streamPoolExhausted } from '@booktape/storage';
import { PUBLIC_SECURITY } from '../http/auth.ts';
import type { Probe, ProbeResult, Services } from '../services.ts';
import { streamPoolJson } from './status.ts';

const health = z.object({
  status: z.enum(['ok', 'degraded']),
  time: z.string(),
  checks: z.record(z.string(), z.boolean()),
  details: z
    .record(z.string(), z.object({ state: z.string(), detail: z.string().nullable() }))
    .optional()
    .describe('State of the checks that report one, and why (e.g. sink: joining while it waits for its Kafka consumer group)'),
  stream_pool: z
    .object({
      in_use: z.number().int(),
      max: z.number().int(),
      waiting: z.number().int(),
      longest_wait_ms: z.number().int(),
      busy_timeouts: z.number().int().describe('Reads that waited the whole session wait and answered 503, since start'),
      last_busy_timeout_at: z.string().nullable(),
    })
    .optional()
    .describe('The embedded engine\'s pool of streaming sessions (absent on a ClickHouse server); check stream_sessions is false while reads wait for a session'),
});

const PROBE_TIMEOUT_MS = 1500;

async function probe(fn: Probe): Promise<ProbeResult> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      Promise.resolve().then(fn),
      new Promise<ProbeResult>((resolve) => (timer = setTimeout(() => resolve({ ok: false, state: 'timeout', detail: `no answer within ${PROBE_TIMEOUT_MS} ms` }), PROBE_TIMEOUT_MS))),
    ]);
  } catch (e) {
    return { ok: false, state: 'error', detail: (e as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

/** Liveness of the API and its backing services; no authentication. 503 when one is down. */
export const healthRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { probes, streamPool } = services.health;
  app.get(
    '/health',
    {
      schema: {
        summary: 'Health of the API and the services it needs',
        tags: ['service'],
        security: PUBLIC_SECURITY,
        querystring: z.object({}),
        response: {
          200: health.describe('Every check passed: status ok.'),
          503: health.describe('A check failed (status degraded): `checks` says which, `details` why.'),
        },
      },
    },
    async (_req, reply) => {
      const checks: Record<string, boolean> = {};
      const details: Record<string, { state: string; detail: string | null }> = {};
      await Promise.all(
        Object.entries(probes).map(async ([name, fn]) => {
          const r = await probe(fn);
          if (typeof r === 'boolean') checks[name] = r;
          else {
            checks[name] = r.ok;
            details[name] = { state: r.state, detail: r.detail };
          }
        }),
      );
      // The embedded engine's stream sessions: every one held (slow or leaked readers) makes
      // raw reads wait and answer 503 while the store itself still answers its ping.
      const now = Date.now();
      const pool = streamPool(now);
      if (pool) checks['stream_sessions'] = !streamPoolExhausted(pool, now);
      const ok = Object.values(checks).every(Boolean);
      return reply.status(ok ? 200 : 503).send({
        status: ok ? 'ok' : 'degraded',
        time: new Date(now).toISOString(),
        checks,
        ...(Object.keys(details).length > 0 ? { details } : {}),
        ...(pool ? { stream_pool: streamPoolJson(pool) } : {}),
      });
    },
  );
};
