import { hash } from 'node:crypto';

/**
 * JSON with object keys sorted at every depth, so that equal values give equal text no
 * matter the key order the venue (or a JSON round trip) produced. Follows JSON.stringify
 * otherwise: undefined members are dropped, undefined array items and non-finite numbers
 * become null.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number') return Number.isFinite(value) ? JSON.stringify(value) : 'null';
  if (typeof value === 'string' || typeof value === 'boolean') return JSON.stringify(value);
  if (typeof value === 'bigint') return value.toString();
  // The common case, a book's levels: already in canonical order, written by the engine's own JSON.stringify.
  if (typeof value === 'object' && inCanonicalOrder(value)) return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v)).join(',')}]`;
  if (typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    const parts: string[] = [];
    for (const key of Object.keys(obj).sort()) {
      const v = obj[key];
      if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
      parts.push(`${JSON.stringify(key)}:${canonicalJson(v)}`);
    }
    return `{${parts.join(',')}}`;
  }
  return 'null';
}

/**
 * True when JSON.stringify(v) already is v's canonical JSON: plain data only (strings,
 * booleans, finite numbers, null, arrays, plain objects), object keys in sorted order at
 * every depth. Any doubt (a class instance, toJSON, undefined, a bigint, integer-like keys
 * enumerated out of string order) answers false and leaves the value to the general path.
 * A walk with no allocation: a 40-level book's canonical JSON costs a quarter of building it.
 */
function inCanonicalOrder(v: unknown): boolean {
  if (v === null) return true;
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(v);
    case 'object':
      break;
    default:
      return false;
  }
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!inCanonicalOrder(v[i])) return false;
    return true;
  }
  const proto: unknown = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return false;
  const o = v as Record<string, unknown>;
  let prev: string | undefined;
  for (const k in o) {
    if (prev !== undefined && !(prev < k)) return false;
    prev = k;
    if (!inCanonicalOrder(o[k])) return false;
  }
  return true;
}

/** One-shot `crypto.hash`: about twice as fast as a Hash object per record (the sequencer hashes every record). */
export function sha1Hex(text: string): string {
  return hash('sha1', text, 'hex');
}

/** SHA-1 hex of the canonical JSON of a value: the identity of content with no venue id. */
export function contentHash(value: unknown): string {
  return sha1Hex(canonicalJson(value));
}
