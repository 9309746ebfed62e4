/**
 * The long CSV format of raw records, restated from docs/api.md ("Formats") for the tests:
 * one row per level, the record's fields repeated; a record without levels is one row.
 * Written from the documentation, not from RawRowsToCsv or the export SQL.
 */
const s = (v: unknown) => (v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));
export function aCsv(r: any): Array<Record<string, string>> {
  const levels: string[][] = [
    ...(r.bids ?? []).map((l: any) => ['bid', l.price, l.size]),
    ...(r.asks ?? []).map((l: any) => ['ask', l.price, l.size]),
    ...(r.changes ?? []).map((c: any) => [c.side === 'BUY' ? 'bid' : 'ask', c.price, c.size]),
  ];
  return (levels.length ? levels : [['', '', '']]).map(([side, price, size]) => ({
    timestamp: r.timestamp,
    asset_id: r.asset_id,
    event_type: r.event_type,
    side: side!,
    price: price!,
    size: size!,
    hash: r.hash,
    received_at: r.received_at,
  }));
}
export function bCsv(r: any): Array<Record<string, string>> {
  const row = (side: unknown, price: unknown, size: unknown, delta: unknown) => ({
    timestamp: String(r.epoch_ms),
    ticker: r.ticker,
    type: r.type,
    side: s(side),
    price: s(price),
    size: s(size),
    delta: s(delta),
    seq: s(r.seq),
    sid: s(r.sid),
    expected_seq: s(r.expected_seq),
    received_at: r.received_at,
    data: s(r.data),
  });
  if (r.type === 'delta') return [row(r.side, r.price, null, r.delta)];
  const levels = [...(r.yes ?? []).map((l: string[]) => row('yes', l[0], l[1], null)), ...(r.no ?? []).map((l: string[]) => row('no', l[0], l[1], null))];
  return levels.length ? levels : [row(null, null, null, null)];
}

