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

/** One-shot `crypto.hash`: about twice as fast as a Hash object per record (the sequencer hashes every record). */
export function sha1Hex(text: string): string {
  return hash('sha1', text, 'hex');
}

/** SHA-1 hex of the canonical JSON of a value: the identity of content with no venue id. */
export function contentHash(value: unknown): string {
  return sha1Hex(canonicalJson(value));
}
