import type { RawInclude } from '@booktape/storage';
import { q } from '../http/params.ts';

/**
 * `include`: fields a raw answer adds to every record on request (docs/api.md, "Records").
 * Shared by the raw pages and the raw export, so both know the same values.
 */
export const INCLUDE = ['source'] as const;
export type Include = (typeof INCLUDE)[number];

export const includeField = (where = '') =>
  q.list(
    INCLUDE,
    `Fields to add to every record${where}, comma-separated. source: where the record came from, \`capture:worker-<worker_id>\` (own capture) or \`import:<format>:<file>\` (docs/api.md, "Records"). Absent: the records as always.`,
  );

/** The fields asked for, as the repository reads them; empty without `include`. */
export function includeOf(include: readonly Include[] | undefined): RawInclude {
  return include?.includes('source') ? { source: true } : {};
}

/** CSV columns after the venue's own: the included fields. */
export const trailOf = (include: RawInclude): string[] => (include.source ? ['source'] : []);
