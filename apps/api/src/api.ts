import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import { buildServices } from './composition.ts';
import type { ApiDeps } from './services.ts';

export interface ApiOptions {
  host: string;
  port: number;
}

/** The services and the app on them; closing the app stops the services. */
export async function createApp(deps: ApiDeps): Promise<FastifyInstance> {
  const { services, serving, stop } = buildServices(deps);
  try {
    const app = await buildApp(services);
    app.addHook('onListen', async () => serving());
    app.addHook('onClose', stop);
    return app;
  } catch (e) {
    await stop();
    throw e;
  }
}

/** The API as a long-running part: `{ start, stop }` around the Fastify app. */
export function createApi(deps: ApiDeps, opts: ApiOptions) {
  let app: FastifyInstance | undefined;
  let stopping: Promise<void> | undefined;
  return {
    async start(): Promise<string> {
      app = await createApp(deps);
      const address = await app.listen({ host: opts.host, port: opts.port });
      deps.log.info({ address }, 'api listening');
      // Said where the operator looks first; /status and /monitoring/status keep saying it.
      if (deps.config.openServiceWarning !== undefined) deps.log.warn(deps.config.openServiceWarning);
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
