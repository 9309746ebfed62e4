import type { Logger } from '@booktape/config';
import type { ClickHouse } from '@booktape/storage';

export interface RollupWorkerDeps {
  ch: ClickHouse;
  redisUrl: string;
  log: Logger;
}

/**
 * The rollup worker's place in the composition. The summaries it will compute (book
 * engine, bucketing, BullMQ jobs) are the rollups issue; until then it starts, says so,
 * and stops cleanly, so the launcher and the production compose file already have their
 * final shape.
 */
export function createRollupWorker(deps: RollupWorkerDeps) {
  return {
    async start(): Promise<void> {
      deps.log.info('rollup worker started (no summary jobs are defined yet)');
    },
    async stop(): Promise<void> {},
    health: () => ({ ok: true }),
  };
}

export type RollupWorker = ReturnType<typeof createRollupWorker>;
