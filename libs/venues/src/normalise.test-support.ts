import type { NormaliseResult } from './normalise.types.ts';

/** The records of a result expected to hold records; throws, showing the result, otherwise. */
export function records<T>(r: NormaliseResult<T>): T[] {
  if (r.kind !== 'records') throw new Error(`expected records, got ${JSON.stringify(r)}`);
  return r.records;
}

/** The reason of a result expected to be invalid; throws, showing the result, otherwise. */
export function invalid<T>(r: NormaliseResult<T>): string {
  if (r.kind !== 'invalid') throw new Error(`expected invalid, got ${JSON.stringify(r)}`);
  return r.reason;
}
