import { Readable } from 'node:stream';
import type { CaptureGap } from '@booktape/domain';
import type { ClickHouse } from './clickhouse.ts';

export class CaptureGapsRepository {
  constructor(private readonly ch: ClickHouse) {}

  async insert(gaps: CaptureGap[]): Promise<void> {
    if (gaps.length === 0) return;
    const body = gaps
      .map((g) =>
        JSON.stringify({
          venue: g.venue,
          connection_id: g.connection_id,
          started_at: Date.parse(g.started_at),
          ended_at: g.ended_at === null ? null : Date.parse(g.ended_at),
          reason: g.reason,
          markets: g.markets,
        }),
      )
      .join('\n');
    const r = await this.ch.client.exec({
      query: `INSERT INTO ${this.ch.table('capture_gaps')} (venue, connection_id, started_at, ended_at, reason, markets) FORMAT JSONEachRow`,
      values: Readable.from([body + '\n']),
    });
    r.stream.resume();
  }

  async list(venue?: string): Promise<CaptureGap[]> {
    const rs = await this.ch.client.query({
      query: `SELECT venue, connection_id,
          formatDateTime(started_at, '%Y-%m-%dT%H:%i:%S.%fZ', 'UTC') AS started_at,
          if(isNull(ended_at), NULL, formatDateTime(assumeNotNull(ended_at), '%Y-%m-%dT%H:%i:%S.%fZ', 'UTC')) AS ended_at,
          reason, markets
        FROM ${this.ch.table('capture_gaps')} FINAL
        ${venue ? 'WHERE venue = {venue:String}' : ''}
        ORDER BY started_at`,
      query_params: venue ? { venue } : {},
      format: 'JSONEachRow',
    });
    return rs.json<CaptureGap>();
  }
}
