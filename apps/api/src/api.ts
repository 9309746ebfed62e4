import type { FastifyInstance } from 'fastify';
import { buildApp, type ApiDeps } from './app.ts';

export interface ApiOptions {
  host: string;
  port: number;
}

/** The API as a long-running part: `{ start, stop }` around the Fastify app. */
export function createApi(deps: ApiDeps, opts: ApiOptions) {
  let app: FastifyInstance | undefined;
  let stopping: Promise<void> | undefined;
  return {
    async start(): Promise<string> {
      app = await buildApp(deps);
      const address = await app.listen({ host: opts.host, port: opts.port });
      deps.log.info({ address }, 'api listening');
      return address;
    },
    /** Stops accepting, lets running requests finish, flushes key usage. Runs once. */
    stop(): Promise<void> {
      stopping ??= (async () => {
        await app?.close();
        app = undefined;
      })();
      return stopping;
    },
    get app() {
      return app;
    },
  };
}

export type Api = ReturnType<typeof createApi>;
