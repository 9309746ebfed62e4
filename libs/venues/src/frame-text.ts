/** Shared helpers for reading one websocket frame, whichever venue sent it. */

export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

export function ok<T>(value: T): Parsed<T> {
  return { ok: true, value };
}

export function bad<T = never>(reason: string): Parsed<T> {
  return { ok: false, reason };
}

/** A short, single-line excerpt of untrusted text for a dead-letter reason. */
export function excerpt(text: string, max = 60): string {
  const flat = text.replace(/\s+/g, ' ');
  return JSON.stringify(flat.length > max ? `${flat.slice(0, max)}…` : flat);
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Names a JSON value's kind for error messages. */
export function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

/** Text of a frame that arrived as text or bytes; undefined for already-parsed frames. */
export function frameText(frame: unknown): string | undefined {
  if (typeof frame === 'string') return frame;
  if (frame instanceof Uint8Array) return new TextDecoder().decode(frame);
  return undefined;
}

/** JSON.parse that reports instead of throwing. */
export function parseJson(text: string): Parsed<unknown> {
  try {
    return ok(JSON.parse(text) as unknown);
  } catch {
    return bad(`not JSON: ${excerpt(text)}`);
  }
}

const INTEGER = /^-?\d{1,16}$/;

/** A safe integer from a JSON number or an integer string, else undefined. */
export function toInteger(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? v : undefined;
  if (typeof v === 'string' && INTEGER.test(v)) {
    const n = Number(v);
    return Number.isSafeInteger(n) ? n : undefined;
  }
  return undefined;
}
