/**
 * Splits tokens over connections of at most `maxPerConnection`, balanced, keeping the order
 * (discovery lists a market's YES and NO tokens together; an even chunk size keeps them together).
 */
export function spreadTokens(tokens: string[], maxPerConnection: number): string[][] {
  if (!Number.isInteger(maxPerConnection) || maxPerConnection < 1) {
    throw new RangeError(`maxTokensPerConnection must be a positive integer, got ${maxPerConnection}`);
  }
  const unique = [...new Set(tokens)];
  if (unique.length === 0) return [];
  const n = Math.ceil(unique.length / maxPerConnection);
  let size = Math.ceil(unique.length / n);
  if (size % 2 === 1 && size < maxPerConnection) size++;
  const out: string[][] = [];
  for (let i = 0; i < unique.length; i += size) out.push(unique.slice(i, i + size));
  return out;
}
