/** 2^64 − 1, the largest unsigned 64-bit integer, in decimal. */
export const MAX_U64_TEXT = '18446744073709551615';

/** The halves u64TextHalves leaves: `[0]` the low 32 bits, `[1]` the high 32 bits. */
export const U64_HALVES = new Uint32Array(2);

/**
 * The two 32-bit halves of an unsigned 64-bit integer written in decimal, without BigInt
 * (a BigInt per ingest sequence was a visible share of the sink's and the Kafka codec's
 * time), into U64_HALVES. The caller has checked `s`: 1 to 20 digits, at most MAX_U64_TEXT.
 */
export function u64TextHalves(s: string): void {
  const n = s.length;
  // The digits before the last ten, and the last ten: each exact in a double.
  const a = n > 10 ? Number(s.slice(0, n - 10)) : 0;
  const b = n > 10 ? Number(s.slice(n - 10)) : Number(s);
  const whole = a * 1e10 + b; // exact when at most 2^53 (rounding is monotonic, so the test is too)
  if (whole <= Number.MAX_SAFE_INTEGER) {
    const hi = Math.floor(whole / 2 ** 32);
    U64_HALVES[0] = whole - hi * 2 ** 32;
    U64_HALVES[1] = hi;
    return;
  }
  const ah = Math.floor(a / 65536);
  const al = a - ah * 65536;
  const x = al * 1e10 + b; // < 2^50
  const y = ah * 1e10; // < 2^49
  const yHi = Math.floor(y / 65536);
  const t = (y - yHi * 65536) * 65536 + x; // < 2^51
  const carry = Math.floor(t / 2 ** 32);
  U64_HALVES[0] = t - carry * 2 ** 32;
  U64_HALVES[1] = yHi + carry;
}
