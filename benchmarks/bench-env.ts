/**
 * A whole number from the environment, or the default; anything else stops the benchmark with
 * a message naming the variable (a NaN would otherwise surface later as a confusing crash or a
 * null figure). Runners import it too, so the baseline tree gets a copy (sideBySide's list).
 */
export function intEnv(name: string, fallback: number, min = 0): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name}=${raw}: expected a whole number >= ${min}`);
  return n;
}
