/**
 * Number formatting for the venues' wire shapes. Prices are kept as integer thousandths of a
 * dollar and sizes as integer hundredths of a contract/share, so every value on the wire is an
 * exact decimal (no binary noise).
 */

/** Price thousandths → shortest decimal ("0.5", "0.48", "0.001"), as exchange A writes it. */
const SHORT: string[] = [];
/** Price thousandths → four decimals ("0.4800"), exchange B's `*_dollars_fp` shape. */
const FIXED4: string[] = [];
/** Price thousandths → two decimals ("0.48"), exchange B's older `*_dollars` shape. */
const FIXED2: string[] = [];

for (let u = 0; u <= 1000; u++) {
  const s = (u / 1000).toFixed(3);
  SHORT[u] = s.replace(/0+$/, '').replace(/\.$/, '');
  FIXED4[u] = `${s}0`;
  FIXED2[u] = (u / 1000).toFixed(2);
}

export function priceShort(units: number): string {
  return SHORT[units] as string;
}

export function priceFixed4(units: number): string {
  return FIXED4[units] as string;
}

export function priceFixed2(units: number): string {
  return FIXED2[units] as string;
}

/** Size hundredths → shortest decimal ("30", "12.5", "0.01"); negative allowed. */
export function sizeShort(hundredths: number): string {
  if (hundredths % 100 === 0) return String(hundredths / 100);
  const s = (hundredths / 100).toFixed(2);
  return s.endsWith('0') ? s.slice(0, -1) : s;
}

/** Size hundredths → two decimals ("20.00", "-50.00"), exchange B's `*_fp` shape. */
export function sizeFixed2(hundredths: number): string {
  return (hundredths / 100).toFixed(2);
}
