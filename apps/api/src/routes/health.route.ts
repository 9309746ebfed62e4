import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ApiDeps } from '../app.ts';
import { health } from '../schemas.ts';

const PROBE_TIMEOUT_MS = 1500;

async function probe(fn: () => Promise<boolean> | boolean): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      Promise.resolve().then(fn),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), PROBE_TIMEOUT_MS))),
    ]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** Liveness of the API and its backing services; no authentication. 503 when one is down. */
export const healthRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get(
    '/health',
    {
      schema: {
        summary: 'Health of the API and the services it needs',
        tags: ['service'],
        querystring: z.object({}),
        response: { 200: health, 503: health },
      },
    },
    async (_req, reply) => {
      const checks: Record<string, boolean> = {};
      const all: Record<string, () => Promise<boolean> | boolean> = {
        clickhouse: async () => (await deps.ch.client.ping()).success,
        redis: async () => deps.redis.status === 'ready' && (await deps.redis.ping()) === 'PONG',
        ...deps.probes,
      };
      await Promise.all(Object.entries(all).map(async ([name, fn]) => (checks[name] = await probe(fn))));
      const ok = Object.values(checks).every(Boolean);
      return reply.status(ok ? 200 : 503).send({ status: ok ? 'ok' : 'degraded', time: new Date().toISOString(), checks });
    },
  );
};
