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
 * Only the types these reads use are accepted, each value checked against its type (a
 * string is quoted by `sqlString`, which escapes backslashes and quotes: nothing in a value
 * can end the literal); anything else throws, so a new placeholder type cannot slip through
 * unchecked. The literal is CAST to the placeholder's type: functions that demand Int64
 * (fromUnixTimestamp64Milli) get Int64, as when bound.
 */
export function inlineParams(sql: string, params: Record<string, unknown>): string {
  return sql.replace(/\{([A-Za-z_][A-Za-z0-9_]*):([^{}]+)\}/g, (_, name: string, type: string) => {
    if (!Object.hasOwn(params, name)) throw new Error(`inlineParams: no value for {${name}:${type}}`);
    return literal(type, params[name], name);
  });
}

const INTEGER = /^-?(0|[1-9][0-9]{0,19})$/;
const UNSIGNED = new Set(['UInt8', 'UInt16', 'UInt32', 'UInt64']);
const DATE = /^[0-9]{4}-[0-9]{2}-[0-9]{2}$/;

function literal(type: string, v: unknown, name: string): string {
  if (type === 'String') {
    if (typeof v !== 'string') throw new Error(`inlineParams: {${name}:String} is not a string`);
    return sqlString(v);
  }
  if (type === 'Date') {
    if (typeof v !== 'string' || !DATE.test(v)) throw new Error(`inlineParams: {${name}:Date} is not a YYYY-MM-DD date`);
    return `CAST('${v}' AS Date)`;
  }
  if (type === 'Int64' || UNSIGNED.has(type)) {
    const text = typeof v === 'number' ? (Number.isSafeInteger(v) ? String(v) : '') : typeof v === 'bigint' || typeof v === 'string' ? String(v) : '';
    if (!INTEGER.test(text) || (UNSIGNED.has(type) && text.startsWith('-'))) throw new Error(`inlineParams: {${name}:${type}} is not an integer of that type`);
    // Negative text goes in quoted: CAST('-5' AS Int64), never a unary minus on an unsigned literal.
    return `CAST('${text}' AS ${type})`;
  }
  throw new Error(`inlineParams: placeholder type ${type} of {${name}} is not supported`);
}

/**
 * The query and its parameters as the connection runs them best: on the embedded engine the
 * values written into the text (no parameters: not chained, see above), on a server bound as
 * they are.
 */
export function unchained(ch: Pick<ClickHouse, 'mode'>, query: string, params: Record<string, unknown>): { query: string; query_params?: Record<string, unknown> } {
  return ch.mode === 'embedded' ? { query: inlineParams(query, params) } : { query, query_params: params };
}
