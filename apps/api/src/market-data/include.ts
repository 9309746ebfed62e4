import type { RawInclude } from '@booktape/storage';
import { q } from '../http/params.ts';

/**
 * `include`: fields a raw answer adds to every record on request (docs/api.md, "Records").
 * Shared by the raw pages and the raw export, so both know the same values.
 */
export const INCLUDE = ['source'] as const;
/** The raw export takes one more: `record`, the stored record whole, for `booktape import`. */
export const EXPORT_INCLUDE = ['source', 'record'] as const;
export type Include = (typeof EXPORT_INCLUDE)[number];

const SOURCE_DOC = 'source: where the record came from, `capture:worker-<worker_id>` (own capture) or `import:<format>:<file>` (docs/api.md, "Records").';
const RECORD_DOC =
  ' record: the stored record whole as JSON text, on the first row of each record (empty on the rows of its other levels), so that `booktape import` rebuilds it exactly (docs/rules/imports.md, "booktape\'s own exports").';

export const includeField = (where = '') => q.list(INCLUDE, `Fields to add to every record${where}, comma-separated. ${SOURCE_DOC} Absent: the records as always.`);

/** The raw export's `include`: source and record. */
export const exportIncludeField = (where = '') => q.list(EXPORT_INCLUDE, `Fields to add to every record${where}, comma-separated, in this order. ${SOURCE_DOC}${RECORD_DOC} Absent: the records as always.`);

/** The fields asked for, as the repository reads them; empty without `include`. */
export function includeOf(include: readonly Include[] | undefined): RawInclude {
  return { ...(include?.includes('source') ? { source: true } : {}), ...(include?.includes('record') ? { record: true } : {}) };
}

/** CSV columns after the venue's own: the included fields, source before record. */
export const trailOf = (include: RawInclude): string[] => [...(include.source ? ['source'] : []), ...(include.record ? ['record'] : [])];
