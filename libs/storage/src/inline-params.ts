import { sqlString, type ClickHouse } from './clickhouse.ts';

/**
 * A bound query's `{name:Type}` placeholders written into its text as typed literals, for
 * the embedded engine's hot small reads (a book answer's checkpoint state and the records
 * after it).
 *
 * Why: the embedded engine binds parameters through one process-wide chain (its binding is
 * not safe across connections), so every bound query of the process waits for the one
 * before it, and a book answer's two reads ran one after the other. A query without
 * parameters is not chained: the two run side by side on their own sessions.
 *
 * Only the types these reads use are written, each value checked against its type (a
 * string is quoted by `sqlString`, which escapes backslashes and quotes: nothing in a value
 * can end the literal). A value that is not of its placeholder's type, a missing one or a
 * type not known here is not written: the answer says why (`ok: false`) instead of
 * throwing, so no caller can turn an odd value into a crash. The literal is CAST to the
 * placeholder's type: functions that demand Int64 (fromUnixTimestamp64Milli) get Int64, as
 * when bound.
 */
export type Inlined = { ok: true; query: string } | { ok: false; reason: string };

export function inlineParams(sql: string, params: Readonly<Record<string, unknown>>): Inlined {
  let reason: string | null = null;
  const query = sql.replace(/\{([A-Za-z_][A-Za-z0-9_]*):([^{}]+)\}/g, (whole, name: string, type: string) => {
    if (reason !== null) return whole;
    const lit = Object.hasOwn(params, name) ? literal(type, params[name], name) : { ok: false as const, reason: `no value for {${name}:${type}}` };
    if (lit.ok) return lit.query;
    reason = lit.reason;
    return whole;
  });
  return reason === null ? { ok: true, query } : { ok: false, reason };
}

const INTEGER = /^-?(0|[1-9][0-9]{0,19})$/;
const UNSIGNED = new Set(['UInt8', 'UInt16', 'UInt32', 'UInt64']);
const DATE = /^[0-9]{4}-[0-9]{2}-[0-9]{2}$/;

function literal(type: string, v: unknown, name: string): Inlined {
  const no = (why: string): Inlined => ({ ok: false, reason: `{${name}:${type}} ${why}` });
  if (type === 'String') return typeof v === 'string' ? { ok: true, query: sqlString(v) } : no('is not a string');
  if (type === 'Date') {
    return typeof v === 'string' && DATE.test(v) ? { ok: true, query: `CAST('${v}' AS Date)` } : no('is not a YYYY-MM-DD date');
  }
  if (type === 'Int64' || UNSIGNED.has(type)) {
    const text = typeof v === 'number' ? (Number.isSafeInteger(v) ? String(v) : '') : typeof v === 'bigint' || typeof v === 'string' ? String(v) : '';
    if (!INTEGER.test(text) || (UNSIGNED.has(type) && text.startsWith('-'))) return no('is not an integer of that type');
    // Negative text goes in quoted: CAST('-5' AS Int64), never a unary minus on an unsigned literal.
    return { ok: true, query: `CAST('${text}' AS ${type})` };
  }
  return no('has a type not written into text here');
}

/**
 * The query and its parameters as the connection runs them best: on the embedded engine the
 * values written into the text (no parameters: not chained, see above), on a server bound as
 * they are. A value that cannot be written into the text stays bound: the same answer (the
 * engine checks it as it checks any bound value), only queued in the chain. Never throws.
 */
export function unchained(ch: Pick<ClickHouse, 'mode'>, query: string, params: Record<string, unknown>): { query: string; query_params?: Record<string, unknown> } {
  if (ch.mode !== 'embedded') return { query, query_params: params };
  const inlined = inlineParams(query, params);
  return inlined.ok ? { query: inlined.query } : { query, query_params: params };
}
