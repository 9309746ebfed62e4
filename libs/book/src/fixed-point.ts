import { addDecimal } from '@booktape/decimal';

/**
 * Exact fixed-point helpers for the hot paths of the book engine and the bucketing.
 *
 * Every value handled here is an exact decimal: prices are integers of 10^-scale units held
 * in JS numbers (always far below 2^53, so every operation is exact integer arithmetic),
 * sizes are canonical decimal strings (decimal.ts) that are only ever added, with a
 * safe-integer fast path and a BigInt fallback. No value is ever the result of float
 * arithmetic on a fraction.
 */

/** Finest price the engine represents: 10^-6 (venues tick at 0.01, 0.001, at most 0.0001). */
export const MAX_PRICE_DECIMALS = 6;

export const POW10: readonly number[] = Array.from({ length: 16 }, (_, i) => 10 ** i);

/** Fraction digits (trailing zeros excluded) of the last price `readPrice` accepted. */
export const readScratch = { decimals: 0 };

/**
 * A price in [0, 1] as integer units of 10^-decimals, `readScratch.decimals` being its
 * significant fraction digits (at most 6), or -1 when the text is not such a price:
 * `digits[.digits]` or `.digits`, nothing else (trailing fraction zeros are allowed). Hand-rolled, it runs
 * once per level of every book event; returning the price at its own scale lets the book
 * index it with one multiplication.
 */
export function readPrice(s: string): number {
  const n = s.length;
  if (n === 0 || n > 40) return -1;
  let c = s.charCodeAt(0);
  let int = 0;
  let i = 0;
  // ".48": Polymarket's documented book example writes prices without the leading zero.
  if (c !== 46) {
    if (c < 48 || c > 57) return -1;
    int = c - 48;
    i = 1;
  }
  for (; i < n; i++) {
    c = s.charCodeAt(i);
    if (c === 46) break;
    if (c < 48 || c > 57) return -1;
    int = int * 10 + (c - 48);
    if (int > 1) return -1;
  }
  if (int > 1) return -1;
  let frac = 0;
  let digits = 0;
  if (i < n) {
    if (++i === n) return -1; // "1." is not a price
    let zeros = 0;
    for (; i < n; i++) {
      c = s.charCodeAt(i);
      if (c === 48) zeros++;
      else if (c > 48 && c <= 57) {
        digits += zeros + 1;
        if (digits > MAX_PRICE_DECIMALS) return -1;
        frac = frac * POW10[zeros + 1]! + (c - 48);
        zeros = 0;
      } else return -1;
    }
  }
  if (int === 1 && frac !== 0) return -1;
  readScratch.decimals = digits;
  return int * POW10[digits]! + frac;
}

// The last two texts read, and their values (a is the newer).
let msTextA = '';
let msA = 0;
let msTextB = '';
let msB = 0;

/**
 * Milliseconds from a record's decimal `timestamp` text: Number() of it, remembered for the
 * last two texts asked. On the rollup's path a record's time is asked for three times (the
 * serving order, then the checks and the book once its millisecond is complete, by which
 * time the serving order has read the next millisecond's first record): with two texts
 * remembered, a millisecond's text is read once, whatever the number of its records.
 * Number() rather than a hand-written digit loop: with ioredis loaded (the API and the
 * rollup worker), `charCodeAt` is slowed for every string of the process
 * (docs/BENCHMARKS.md) and the loop took 140-175 ns a text against 60-80.
 */
export function msFromText(s: string): number {
  if (s === msTextA) return msA;
  if (s === msTextB) return msB;
  const v = Number(s);
  msTextB = msTextA;
  msB = msA;
  msTextA = s;
  msA = v;
  return v;
}

/** Canonical decimal text of `units / 10^scale` (units a safe integer, scale 0..15). */
export function formatUnits(units: number, scale: number): string {
  if (units === 0) return '0';
  const neg = units < 0;
  let digits = String(neg ? -units : units);
  let end = digits.length;
  while (scale > 0 && digits.charCodeAt(end - 1) === 48) {
    end--;
    scale--;
  }
  if (end !== digits.length) digits = digits.slice(0, end);
  let body: string;
  if (scale === 0) body = digits;
  else if (digits.length > scale) body = `${digits.slice(0, digits.length - scale)}.${digits.slice(digits.length - scale)}`;
  else body = `0.${'0'.repeat(scale - digits.length)}${digits}`;
  return neg ? `-${body}` : body;
}

// Text of every price-like value is cached per scale: a book keeps quoting the same few
// hundred prices, mids and spreads, so building the string once saves most of the cost of an
// observation. Scales above 5 (100,001 entries) are formatted each time.
const MAX_CACHED_SCALE = 5;
const textCache: (string | undefined)[][] = [];

/** Canonical text of `units / 10^scale` for a price-like value (|value| ≤ 1 when cached). */
export function unitsText(units: number, scale: number): string {
  if (scale > MAX_CACHED_SCALE) return formatUnits(units, scale);
  const abs = units < 0 ? -units : units;
  let cache = textCache[scale];
  if (cache === undefined) {
    cache = new Array<string | undefined>(POW10[scale]! + 1).fill(undefined);
    textCache[scale] = cache;
  }
  if (abs >= cache.length) return formatUnits(units, scale);
  let t = cache[abs];
  if (t === undefined) {
    t = formatUnits(abs, scale);
    cache[abs] = t;
  }
  return units < 0 ? `-${t}` : t;
}

/**
 * Whether s[from..] is a canonical non-negative decimal: `0` or digits without a leading
 * zero, then optionally `.` and digits not ending in zero. Hand-rolled: it runs for every
 * level of every book event, and a regular expression there cost as much as the rest of
 * the event.
 */
function canonicalFrom(s: string, from: number): boolean {
  const n = s.length;
  if (from >= n) return false;
  let c = s.charCodeAt(from);
  let i = from + 1;
  if (c >= 49 && c <= 57) {
    while (i < n && (c = s.charCodeAt(i)) >= 48 && c <= 57) i++;
  } else if (c !== 48) return false;
  if (i === n) return true;
  if (s.charCodeAt(i) !== 46 || ++i === n) return false;
  for (; i < n; i++) {
    c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return c !== 48;
}

/** A signed size change (exchange B delta): a canonical decimal. */
export function isDeltaText(s: unknown): s is string {
  if (typeof s !== 'string') return false;
  if (s.charCodeAt(0) !== 45) return canonicalFrom(s, 0);
  return s !== '-0' && canonicalFrom(s, 1);
}

/**
 * Canonical text of s[from..] when it is a non-negative decimal `digits[.digits]` in any
 * form (leading or trailing zeros, as venues send "0.50", "20.00", "007"), else null. The
 * slow path behind canonicalSize/canonicalDelta: raw records keep the venue's text.
 */
function normaliseFrom(s: string, from: number): string | null {
  const n = s.length;
  let i = from;
  let intStart = -1; // first non-zero integer digit
  let c = 0;
  for (; i < n; i++) {
    c = s.charCodeAt(i);
    if (c < 48 || c > 57) break;
    if (intStart < 0 && c !== 48) intStart = i;
  }
  // No integer digits is allowed only before a fraction (".5", as Polymarket documents it).
  if (i === from && !(i < n && c === 46)) return null;
  const intEnd = i;
  let fracEnd = intEnd; // end of the fraction without its trailing zeros ('.' included)
  if (i < n) {
    if (c !== 46 || i + 1 === n) return null;
    for (i++; i < n; i++) {
      c = s.charCodeAt(i);
      if (c < 48 || c > 57) return null;
      if (c !== 48) fracEnd = i + 1;
    }
  }
  const int = intStart < 0 ? '0' : s.slice(intStart, intEnd);
  return fracEnd > intEnd ? int + s.slice(intEnd, fracEnd) : int;
}

/**
 * A size as records carry it (venue text: "309.00", "0.50", "20"), as its canonical text,
 * or null when it is not a non-negative decimal. Already-canonical text (most of it) is
 * returned as is after one scan.
 */
export function canonicalSize(s: unknown): string | null {
  if (typeof s !== 'string') return null;
  return canonicalFrom(s, 0) ? s : normaliseFrom(s, 0);
}

/** A signed size change as records carry it ("-50.00"), canonical, or null when not a decimal. */
export function canonicalDelta(s: unknown): string | null {
  if (typeof s !== 'string') return null;
  if (s.charCodeAt(0) !== 45) return canonicalFrom(s, 0) ? s : normaliseFrom(s, 0);
  if (s !== '-0' && canonicalFrom(s, 1)) return s;
  const abs = normaliseFrom(s, 1);
  return abs === null ? null : abs === '0' ? '0' : `-${abs}`;
}

/** True when a canonical decimal is zero or negative. */
export function isNonPositive(canonical: string): boolean {
  return canonical === '0' || canonical.charCodeAt(0) === 45;
}

function fractionDigits(s: string): number {
  const dot = s.indexOf('.');
  return dot < 0 ? 0 : s.length - dot - 1;
}

/**
 * a + b for canonical decimals, exact. When both fit 15 significant digits at their common
 * scale the sum is done on safe integers; otherwise (never in practice) with BigInt.
 */
export function addSizes(a: string, b: string): string {
  const sa = fractionDigits(a);
  const sb = fractionDigits(b);
  const scale = sa > sb ? sa : sb;
  const da = a.length - (sa > 0 ? 1 : 0) - (a.charCodeAt(0) === 45 ? 1 : 0) + (scale - sa);
  const db = b.length - (sb > 0 ? 1 : 0) - (b.charCodeAt(0) === 45 ? 1 : 0) + (scale - sb);
  if (da > 15 || db > 15) return addDecimal(a, b);
  const ua = Number(sa > 0 ? a.replace('.', '') : a) * POW10[scale - sa]!;
  const ub = Number(sb > 0 ? b.replace('.', '') : b) * POW10[scale - sb]!;
  return formatUnits(ua + ub, scale);
}

/**
 * Order of two canonical decimals (decimal.ts form), exact and without parsing: a longer
 * integer part is larger, and between equal-length integer parts the plain string order is
 * the numeric order (a canonical fraction has no trailing zeros, so a prefix is smaller);
 * negatives reverse it. Bucketing compares every observed value, so this matters.
 */
export function compareCanonical(a: string, b: string): number {
  if (a === b) return 0;
  // Indexing, not charCodeAt: ioredis, loaded beside the rollup, makes charCodeAt about 4x
  // slower in the whole process (docs/BENCHMARKS.md); `s[0]` is not affected.
  const negA = a[0] === '-';
  if (negA !== (b[0] === '-')) return negA ? -1 : 1;
  let ia = a.indexOf('.');
  if (ia < 0) ia = a.length;
  let ib = b.indexOf('.');
  if (ib < 0) ib = b.length;
  const r = ia !== ib ? (ia < ib ? -1 : 1) : a < b ? -1 : 1;
  return negA ? -r : r;
}
