/**
 * Exact decimal strings for prices and sizes. Venues send decimals as strings ("0.4200"),
 * as JSON numbers (45) and, for Kalshi's legacy fields, as integer cents; everything stored
 * is one canonical form so that equal values are equal strings and no float arithmetic ever
 * touches a price (docs/rules/summaries.md, rule 8).
 *
 * Canonical form: optional "-", integer part without leading zeros ("0" when below one),
 * then "." and the fraction without trailing zeros when the value is not an integer.
 * "-0" is "0". No exponent, no "+", no whitespace. Examples: "0.4200" → "0.42",
 * "20.00" → "20", "1e-3" → "0.001", -50 → "-50".
 *
 * Accepted input: a finite JS number (read through its shortest round-trip string, so
 * 0.1 is "0.1", never 0.1000000000000000055…), a bigint, or a string of the form
 * `[+-]digits[.digits][e[+-]digits]` (either side of the point may be empty, not both).
 * Rejected: whitespace, hex, "Infinity", "NaN", thousands separators, empty strings, and
 * values whose canonical form would need more than MAX_DIGITS digits (an exponent such as
 * "1e999999" must not allocate a megabyte string).
 */

export type DecimalResult = { ok: true; value: string } | { ok: false; reason: string };

/** Upper bound on the digits of a canonical value: generous for prices and sizes. */
export const MAX_DIGITS = 80;
const MAX_INPUT_LENGTH = 200;

const DECIMAL_SYNTAX = /^([+-])?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d{1,6}))?$/;
const CANONICAL = /^-?(0|[1-9]\d*)(\.\d*[1-9])?$/;

function fail(reason: string): DecimalResult {
  return { ok: false, reason };
}

function describe(input: unknown): string {
  if (typeof input === 'string') {
    return JSON.stringify(input.length > 40 ? `${input.slice(0, 40)}…` : input);
  }
  if (typeof input === 'number' || typeof input === 'bigint' || typeof input === 'boolean') {
    return String(input);
  }
  if (input === null) return 'null';
  if (Array.isArray(input)) return 'an array';
  return typeof input === 'object' ? 'an object' : typeof input;
}

function fromSyntax(text: string, original: unknown): DecimalResult {
  if (text.length > MAX_INPUT_LENGTH) return fail(`not a decimal: too long (${text.length} characters)`);
  const m = DECIMAL_SYNTAX.exec(text);
  if (!m) return fail(`not a decimal: ${describe(original)}`);
  const sign = m[1] ?? '';
  const int = m[2] ?? '';
  const frac = m[3] ?? '';
  if (int === '' && frac === '') return fail(`not a decimal: ${describe(original)}`);
  const exp = m[4] === undefined ? 0 : Number(m[4]);

  // value = 0.digits × 10^point, with digits stripped of leading and trailing zeros.
  let digits = int + frac;
  let point = int.length + exp;
  const lead = digits.length - digits.replace(/^0+/, '').length;
  digits = digits.slice(lead);
  point -= lead;
  digits = digits.replace(/0+$/, '');
  if (digits === '') return { ok: true, value: '0' };

  const width = Math.max(digits.length, point, digits.length - point);
  if (width > MAX_DIGITS) return fail(`decimal out of range: ${describe(original)}`);

  let body: string;
  if (point <= 0) body = `0.${'0'.repeat(-point)}${digits}`;
  else if (point >= digits.length) body = digits + '0'.repeat(point - digits.length);
  else body = `${digits.slice(0, point)}.${digits.slice(point)}`;
  return { ok: true, value: sign === '-' ? `-${body}` : body };
}

/** The canonical decimal string of a number, bigint or decimal string, or why not. */
export function canonicalDecimal(input: unknown): DecimalResult {
  if (typeof input === 'string') return fromSyntax(input, input);
  if (typeof input === 'number') {
    if (!Number.isFinite(input)) return fail(`not a finite number: ${describe(input)}`);
    return fromSyntax(String(input), input);
  }
  if (typeof input === 'bigint') return fromSyntax(input.toString(), input);
  return fail(`not a decimal: ${describe(input)}`);
}

const PLAIN_DECIMAL = /^-?(\d+(\.\d+)?|\.\d+)$/;

/**
 * What nearly every venue decimal looks like ("0.42", "0.4200", "20.00", "-50"): plain, no
 * leading zero, no exponent. Its canonical text is itself less the fraction's trailing zeros,
 * found without fromSyntax's general reading (every price and size of every frame comes here).
 */
const SIMPLE_DECIMAL = /^-?(?:0|[1-9]\d*)(?:\.\d+)?$/;
const TRAILING_FRACTION_ZEROS = /\.?0+$/;

function simpleCanonical(text: string): string {
  // Only a fraction that ends in a zero has zeros to drop (most prices end in another digit).
  const c = text.endsWith('0') && text.includes('.') ? text.replace(TRAILING_FRACTION_ZEROS, '') : text;
  return c === '-0' ? '0' : c;
}

/**
 * A venue's decimal as the raw records keep it (issue 9 point 3: raw data as received).
 * Validated exactly like canonicalDecimal; the result is the venue's own text when it is a
 * plain decimal string (`digits[.digits]` or `.digits`, optional "-": "0.50", "309.00",
 * "-50.00", and ".48" as Polymarket's documentation writes prices), and the canonical text
 * otherwise: a JSON number has no text of its own (45 → "45", 0.1 →
 * "0.1"), and the rare exotic string ("1e-3", "+5", ".5", "-0") is rewritten to a form every
 * reader parses. Callers check the sign on `canonical`.
 */
export function venueDecimal(input: unknown): { ok: true; value: string; canonical: string } | { ok: false; reason: string } {
  if (typeof input === 'string' && input.length <= MAX_DIGITS && SIMPLE_DECIMAL.test(input)) {
    const canonical = simpleCanonical(input);
    return { ok: true, value: canonical === '0' && input.startsWith('-') ? '0' : input, canonical };
  }
  const c = canonicalDecimal(input);
  if (!c.ok) return c;
  // "-0.00" is zero: stored as "0", since a size must not read as negative.
  const keep = typeof input === 'string' && PLAIN_DECIMAL.test(input) && !(c.value === '0' && input.startsWith('-'));
  return { ok: true, value: keep ? input : c.value, canonical: c.value };
}

/** Integer or fractional cents to canonical dollars, exactly ("45" → "0.45"). */
export function centsToDollars(input: unknown): DecimalResult {
  const c = canonicalDecimal(input);
  if (!c.ok) return c;
  return { ok: true, value: shiftDecimal(c.value, -2) };
}

export function isCanonicalDecimal(s: string): boolean {
  return CANONICAL.test(s) && s !== '-0';
}

/** A canonical decimal as `units / 10^scale`, scale the number of fraction digits. */
export function decimalParts(canonical: string): { units: bigint; scale: number } {
  if (!isCanonicalDecimal(canonical)) throw new RangeError(`not a canonical decimal: ${canonical}`);
  const dot = canonical.indexOf('.');
  if (dot < 0) return { units: BigInt(canonical), scale: 0 };
  return {
    units: BigInt(canonical.slice(0, dot) + canonical.slice(dot + 1)),
    scale: canonical.length - dot - 1,
  };
}

/** The canonical decimal of `units / 10^scale` (scale ≥ 0). */
export function decimalFromParts(units: bigint, scale: number): string {
  if (!Number.isInteger(scale) || scale < 0) throw new RangeError(`bad scale ${scale}`);
  const neg = units < 0n;
  const abs = (neg ? -units : units).toString();
  const text = scale === 0 ? abs : `${abs.slice(0, -scale) || '0'}.${abs.padStart(scale, '0').slice(-scale)}`;
  const r = canonicalDecimal(neg ? `-${text}` : text);
  if (!r.ok) throw new RangeError(r.reason);
  return r.value;
}

/** The canonical decimal multiplied by 10^places (places may be negative). */
export function shiftDecimal(canonical: string, places: number): string {
  const r = canonicalDecimal(`${canonical}e${places}`);
  if (!r.ok) throw new RangeError(r.reason);
  return r.value;
}

/** The value as an integer number of 10^-scale units; throws when that is not exact. */
export function decimalToScaled(canonical: string, scale: number): bigint {
  const p = decimalParts(canonical);
  if (p.scale > scale) throw new RangeError(`${canonical} has more than ${scale} fraction digits`);
  return p.units * 10n ** BigInt(scale - p.scale);
}

function aligned(a: string, b: string): [bigint, bigint, number] {
  const pa = decimalParts(a);
  const pb = decimalParts(b);
  const scale = Math.max(pa.scale, pb.scale);
  return [pa.units * 10n ** BigInt(scale - pa.scale), pb.units * 10n ** BigInt(scale - pb.scale), scale];
}

export function compareDecimal(a: string, b: string): -1 | 0 | 1 {
  const [x, y] = aligned(a, b);
  return x < y ? -1 : x > y ? 1 : 0;
}

export function addDecimal(a: string, b: string): string {
  const [x, y, scale] = aligned(a, b);
  return decimalFromParts(x + y, scale);
}

export function subtractDecimal(a: string, b: string): string {
  const [x, y, scale] = aligned(a, b);
  return decimalFromParts(x - y, scale);
}
