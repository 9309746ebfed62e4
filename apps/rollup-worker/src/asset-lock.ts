import { randomUUID } from 'node:crypto';
import { assetKey, rollupKeys, type AssetRef, type RollupQueue } from '@booktape/messaging';

/** Deletes the lock only while it is still ours (it may have expired and been taken since). */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;

/** Releases a held lock. */
export type Unlock = () => Promise<void>;

/**
 * One job at a time per asset, across processes: a Redis lock per asset, on top of the
 * queue's per-asset deduplication, because back-fills and asset jobs share assets. A lock
 * lasts `ttlMs` unless renewed (every third of it while held): the lock of a process that
 * died must not outlive its claim's lease, since a live worker taking the claim over needs
 * the lock too.
 */
export class AssetLocks {
  constructor(
    private readonly redis: () => RollupQueue['redis'],
    private readonly prefix: string,
    readonly ttlMs: number,
    private readonly pollMs = 250,
  ) {}

  /** The lock, or null when another job holds it. */
  async tryLock(a: AssetRef): Promise<Unlock | null> {
    const id = randomUUID();
    const ok = await this.redis().set(rollupKeys(this.prefix).lock(assetKey(a)), id, 'PX', this.ttlMs, 'NX');
    return ok === 'OK' ? this.held(a, id) : null;
  }

  /**
   * A lock taken as `id` for `ttlMs` (by `tryLock`, or by the queue's `lockAndClaimMany` in the
   * same step as a claim): renewed from now on while held. Returns its release.
   */
  held(a: AssetRef, id: string): Unlock {
    const key = rollupKeys(this.prefix).lock(assetKey(a));
    const redis = this.redis();
    const renew = setInterval(() => void redis.pexpire(key, this.ttlMs).catch(() => undefined), this.ttlMs / 3);
    return async () => {
      clearInterval(renew);
      await redis.eval(RELEASE, 1, key, id).catch(() => undefined);
    };
  }

  /** The lock, once the job holding it let it go. */
  async waitLock(a: AssetRef): Promise<Unlock> {
    for (;;) {
      const unlock = await this.tryLock(a);
      if (unlock) return unlock;
      await new Promise((r) => setTimeout(r, this.pollMs));
    }
  }
}
