import type { ClickHouse } from './clickhouse.ts';
import { isoMsSql } from './market-data.repository.ts';
import { chTime, insertRows, queryFirst, queryRows } from './rows.ts';

export type ApiKeyStatus = 'active' | 'revoked';

/** The stored record of an API key: never the key itself, only its SHA-256 (hex). */
export interface ApiKeyRecord {
  key_id: string;
  user_id: string;
  name: string;
  key_hash: string;
  status: ApiKeyStatus;
  created_at: string; // ISO 8601, ms
  revoked_at: string | null;
}

export interface ApiKeyListItem extends ApiKeyRecord {
  last_used_at: string | null;
}

const RECORD_COLUMNS = `key_id, user_id, name, toString(key_hash) AS key_hash, toString(status) AS status,
  ${isoMsSql('created_at')} AS created_at,
  if(isNull(revoked_at), NULL, ${isoMsSql('assumeNotNull(revoked_at)')}) AS revoked_at`;

/** api_keys and api_key_usage (migration 003). Every value is bound. */
export class ApiKeysRepository {
  constructor(private readonly ch: ClickHouse) {}

  /** Writes a version of a key record (creation, revocation): the latest version wins. */
  async save(rec: ApiKeyRecord): Promise<void> {
    await insertRows(this.ch, 'api_keys', [
      {
        key_id: rec.key_id,
        user_id: rec.user_id,
        name: rec.name,
        key_hash: rec.key_hash,
        status: rec.status,
        created_at: chTime(rec.created_at),
        revoked_at: rec.revoked_at === null ? null : chTime(rec.revoked_at),
        updated_at: chTime(rec.revoked_at ?? rec.created_at),
      },
    ]);
  }

  findByHash(keyHash: string): Promise<ApiKeyRecord | null> {
    return this.findOne('key_hash = {hash:String}', { hash: keyHash });
  }

  findById(keyId: string): Promise<ApiKeyRecord | null> {
    return this.findOne('key_id = {id:String}', { id: keyId });
  }

  private async findOne(where: string, params: Record<string, unknown>): Promise<ApiKeyRecord | null> {
    return queryFirst(this.ch, `SELECT ${RECORD_COLUMNS} FROM ${this.ch.table('api_keys')} FINAL WHERE ${where} LIMIT 1`, params);
  }

  /** A user's active keys, oldest first, with the last use that reached the table. */
  async listActive(userId: string): Promise<ApiKeyListItem[]> {
    const rows = await queryRows<ApiKeyListItem & { created_ts?: unknown }>(
      this.ch,
      `SELECT k.*, if(isNull(u.last_used_at), NULL, ${isoMsSql('assumeNotNull(u.last_used_at)')}) AS last_used_at
        FROM (SELECT ${RECORD_COLUMNS}, created_at AS created_ts FROM ${this.ch.table('api_keys')} FINAL
              WHERE user_id = {user:String} AND status = 'active') AS k
        LEFT JOIN (SELECT key_id, toNullable(max(last_used_at)) AS last_used_at FROM ${this.ch.table('api_key_usage')}
                   WHERE key_id IN (SELECT key_id FROM ${this.ch.table('api_keys')} WHERE user_id = {user:String})
                   GROUP BY key_id) AS u ON u.key_id = k.key_id
        ORDER BY k.created_ts, k.key_id`,
      { user: userId },
    );
    return rows.map(({ created_ts: _, ...r }) => r);
  }

  /** Stores last-use times (a batch; the latest time per key wins). */
  async recordUsage(entries: Array<{ key_id: string; at: number }>): Promise<void> {
    if (entries.length === 0) return;
    await insertRows(this.ch, 'api_key_usage', entries.map((e) => ({ key_id: e.key_id, last_used_at: chTime(e.at) })));
  }
}
