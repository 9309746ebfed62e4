import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '@booktape/config';
import { SingleFlight } from '@booktape/domain';
import type { ApiKeyListItem, ApiKeyRecord, ApiKeysRepository } from '@booktape/storage';
import { ApiError, UnavailableError, guard } from '../http/errors.ts';

/**
 * API keys.
 *
 * Format: `bt_live_` + 43 base64url characters (256 random bits). The prefix makes a
 * leaked key recognisable (secret scanners, logs). Only SHA-256(key) is stored: ClickHouse
 * `api_keys` is the record, Redis caches hash → record. A plain hash (no salt, no slow KDF)
 * is right here: the key has 256 bits of entropy, so it cannot be guessed from its hash,
 * and the lookup must stay cheap on every request.
 *
 * Revocation writes the revoked record to ClickHouse and then over the cached one, so the
 * next request with that key (on any API process) is refused: within a second, as
 * promised, and in practice at once. A cached record lives POSITIVE_TTL_S at most, which
 * bounds the damage if the Redis write of a revocation failed (the client then got a 503
 * and retries the idempotent DELETE).
 *
 * last_used_at: a request only notes the time in memory. Every second the notes go to a
 * Redis sorted set (ZADD GT keeps the latest across processes), every `usageFlushMs` to
 * ClickHouse `api_key_usage` in one insert. GET /keys shows the latest of the three.
 */

export const API_KEY_PREFIX = 'bt_live_';
const API_KEY_RE = /^bt_live_[A-Za-z0-9_-]{43}$/;
const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;
const POSITIVE_TTL_S = 300;
const NEGATIVE_TTL_S = 10;
const REDIS_FLUSH_MS = 1000;
/** Key hashes whose user this process remembers (`knownUser`); forgotten all at once past this. */
const MAX_OWNERS = 10_000;

export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url');
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function looksLikeApiKey(s: string): boolean {
  return API_KEY_RE.test(s);
}

function newKeyId(): string {
  return `key_${randomBytes(12).toString('hex')}`;
}

type Cached = ApiKeyRecord | { missing: true };

export interface KeyServiceDeps {
  repo: ApiKeysRepository;
  redis: Redis;
  log: Logger;
  redisKeyPrefix: string;
  usageFlushMs: number;
}

export class KeyService {
  private readonly pendingRedis = new Map<string, number>();
  private readonly lookups = new SingleFlight<string, ApiKeyRecord | null>();
  private readonly pendingClickHouse = new Map<string, number>();
  private timers: NodeJS.Timeout[] = [];
  private readonly lastUsedKey: string;
  /** Key hash → user id of the keys this process has authenticated: a key never changes user. */
  private readonly owners = new Map<string, string>();

  constructor(private readonly deps: KeyServiceDeps) {
    this.lastUsedKey = `${deps.redisKeyPrefix}apikey:last_used`;
  }

  /**
   * A Redis call that fails at once while the client is reconnecting (Redis known down),
   * instead of queueing until the command timeout: the caller gets its 503 immediately.
   */
  private redisCall<T>(fn: (r: Redis) => Promise<T>): Promise<T> {
    const status = this.deps.redis.status;
    if (status === 'reconnecting' || status === 'end' || status === 'close') return Promise.reject(new UnavailableError('Redis'));
    return guard('Redis', () => fn(this.deps.redis));
  }

  private cacheKey(hash: string): string {
    return `${this.deps.redisKeyPrefix}apikey:${hash}`;
  }

  private async cache(rec: ApiKeyRecord): Promise<void> {
    await this.redisCall((r) => r.set(this.cacheKey(rec.key_hash), JSON.stringify(rec), 'EX', POSITIVE_TTL_S));
  }

  async create(userId: string, name: string): Promise<{ record: ApiKeyRecord; apiKey: string }> {
    const apiKey = generateApiKey();
    const record: ApiKeyRecord = {
      key_id: newKeyId(),
      user_id: userId,
      name,
      key_hash: hashApiKey(apiKey),
      status: 'active',
      created_at: new Date().toISOString(),
      revoked_at: null,
    };
    // Cache first: with Redis down nothing is stored, rather than a key nobody ever received.
    await this.cache(record);
    await guard('ClickHouse', () => this.deps.repo.save(record));
    return { record, apiKey };
  }

  async listActive(userId: string): Promise<ApiKeyListItem[]> {
    const items = await guard('ClickHouse', () => this.deps.repo.listActive(userId));
    if (items.length === 0) return items;
    const ids = items.map((i) => i.key_id);
    const scores = await this.redisCall((r) => r.zmscore(this.lastUsedKey, ...ids));
    return items.map((item, i) => {
      const times = [item.last_used_at ? Date.parse(item.last_used_at) : 0, Number(scores[i] ?? 0), this.pendingRedis.get(item.key_id) ?? 0];
      const latest = Math.max(...times.filter((t) => Number.isFinite(t)));
      return { ...item, last_used_at: latest > 0 ? new Date(latest).toISOString() : null };
    });
  }

  /** Revokes a key of `userId`; null when the user has no such key. Idempotent. */
  async revoke(userId: string, keyId: string): Promise<ApiKeyRecord | null> {
    const rec = await guard('ClickHouse', () => this.deps.repo.findById(keyId));
    if (!rec || rec.user_id !== userId) return null;
    const revoked: ApiKeyRecord = rec.status === 'revoked' ? rec : { ...rec, status: 'revoked', revoked_at: new Date().toISOString() };
    if (rec.status !== 'revoked') await guard('ClickHouse', () => this.deps.repo.save(revoked));
    await this.cache(revoked);
    return revoked;
  }

  /**
   * The user of the key in an Authorization header, when this process has authenticated that
   * key before; nothing is checked (the key may be revoked since: `authenticate` says). A key
   * belongs to one user for good, so this is never wrong about whose key it is; it lets the
   * user's plan be read together with the key's record (one Redis round trip, not two).
   */
  knownUser(header: string | undefined): string | undefined {
    const m = header === undefined ? null : BEARER.exec(header);
    if (m === null || !looksLikeApiKey(m[1]!)) return undefined;
    return this.owners.get(hashApiKey(m[1]!));
  }

  /** The key record behind an Authorization header, or a 401/403 ApiError. */
  async authenticate(header: string | undefined): Promise<ApiKeyRecord> {
    if (!header) throw new ApiError(401, 'unauthorized', 'missing Authorization header: send Authorization: Bearer <API key>');
    const m = BEARER.exec(header);
    if (!m) throw new ApiError(401, 'unauthorized', 'Authorization must be: Bearer <API key>');
    const key = m[1]!;
    if (!looksLikeApiKey(key)) throw new ApiError(401, 'unauthorized', 'unknown API key');
    const hash = hashApiKey(key);
    const rec = await this.lookup(hash);
    // The lookup is by hash; the final comparison is in constant time all the same.
    const stored = Buffer.from(rec?.key_hash ?? '', 'utf8');
    const given = Buffer.from(hash, 'utf8');
    if (!rec || stored.length !== given.length || !timingSafeEqual(stored, given)) {
      throw new ApiError(401, 'unauthorized', 'unknown API key');
    }
    if (this.owners.size >= MAX_OWNERS && !this.owners.has(hash)) this.owners.clear();
    this.owners.set(hash, rec.user_id);
    if (rec.status !== 'active') throw new ApiError(403, 'forbidden', 'this API key was revoked');
    this.touch(rec.key_id);
    return rec;
  }

  private async lookup(hash: string): Promise<ApiKeyRecord | null> {
    const cached = await this.redisCall((r) => r.get(this.cacheKey(hash)));
    if (cached !== null) {
      try {
        const c = JSON.parse(cached) as Cached;
        return 'missing' in c ? null : c;
      } catch {
        // An unreadable cache entry is a miss: ClickHouse has the record.
      }
    }
    // Many requests with one key missing at once (its entry expired under load) share one read.
    return this.lookups.run(hash, async () => {
      const rec = await guard('ClickHouse', () => this.deps.repo.findByHash(hash));
      // Unknown hashes are remembered briefly too, so a flood of bad keys stays off ClickHouse.
      const value: Cached = rec ?? { missing: true };
      await this.redisCall((r) => r.set(this.cacheKey(hash), JSON.stringify(value), 'EX', rec ? POSITIVE_TTL_S : NEGATIVE_TTL_S));
      return rec;
    });
  }

  touch(keyId: string, at = Date.now()): void {
    this.pendingRedis.set(keyId, at);
    this.pendingClickHouse.set(keyId, at);
  }

  /** Sends noted last-use times to Redis. */
  async flushRedis(): Promise<void> {
    if (this.pendingRedis.size === 0) return;
    const batch = [...this.pendingRedis];
    this.pendingRedis.clear();
    const args: Array<string | number> = [];
    for (const [id, at] of batch) args.push(at, id);
    try {
      await this.redisCall((r) => r.zadd(this.lastUsedKey, 'GT', ...args));
    } catch (e) {
      for (const [id, at] of batch) if ((this.pendingRedis.get(id) ?? 0) < at) this.pendingRedis.set(id, at);
      throw e;
    }
  }

  /** Writes noted last-use times to ClickHouse in one insert. */
  async flushClickHouse(): Promise<void> {
    if (this.pendingClickHouse.size === 0) return;
    const batch = [...this.pendingClickHouse];
    this.pendingClickHouse.clear();
    try {
      await this.deps.repo.recordUsage(batch.map(([key_id, at]) => ({ key_id, at })));
    } catch (e) {
      for (const [id, at] of batch) if ((this.pendingClickHouse.get(id) ?? 0) < at) this.pendingClickHouse.set(id, at);
      throw e;
    }
  }

  start(): void {
    if (this.timers.length > 0) return;
    const every = (ms: number, what: string, fn: () => Promise<void>) => {
      let running = false;
      const t = setInterval(() => {
        if (running) return;
        running = true;
        fn()
          .catch((err: unknown) => this.deps.log.warn({ err }, `${what} failed; will retry`))
          .finally(() => (running = false));
      }, ms);
      t.unref();
      this.timers.push(t);
    };
    every(REDIS_FLUSH_MS, 'key usage flush to Redis', () => this.flushRedis());
    every(this.deps.usageFlushMs, 'key usage flush to ClickHouse', () => this.flushClickHouse());
  }

  /** Stops the timers and writes what is still noted (best effort). */
  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.flushRedis().catch((err: unknown) => this.deps.log.warn({ err }, 'final key usage flush to Redis failed'));
    await this.flushClickHouse().catch((err: unknown) => this.deps.log.warn({ err }, 'final key usage flush to ClickHouse failed'));
  }
}
