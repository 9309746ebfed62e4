/**
 * ClickHouse errors that say the rows themselves are wrong: the same rows are refused again
 * however often, or whenever, they are sent. Everything else (network, timeouts, a server
 * that is down or overloaded, too many parts, memory, a missing or detached table, a
 * statement or schema mismatch) is not listed, so an insert refused for an unlisted reason
 * is retried as before: mistaking a transient refusal for bad data would dead-letter good
 * rows, mistaking bad data for a transient refusal only holds the batch.
 *
 * Names as the engine reports them (`errorCodeToName`); codes for errors whose type was not
 * parsed out of the message.
 */
const BAD_DATA: ReadonlyMap<string, number> = new Map([
  ['CANNOT_PARSE_TEXT', 6],
  ['CANNOT_PARSE_ESCAPE_SEQUENCE', 25],
  ['CANNOT_PARSE_QUOTED_STRING', 26],
  ['CANNOT_PARSE_INPUT_ASSERTION_FAILED', 27],
  ['CANNOT_PARSE_DATE', 38],
  ['CANNOT_PARSE_DATETIME', 41],
  ['TYPE_MISMATCH', 53],
  ['ARGUMENT_OUT_OF_BOUND', 69],
  ['CANNOT_CONVERT_TYPE', 70],
  ['CANNOT_PARSE_NUMBER', 72],
  ['INCORRECT_DATA', 117],
  ['TOO_LARGE_ARRAY_SIZE', 128],
  ['TOO_LARGE_STRING_SIZE', 131],
  ['VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE', 321],
  ['CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN', 349],
  ['CANNOT_PARSE_UUID', 376],
  ['DECIMAL_OVERFLOW', 407],
  ['CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING', 441],
  ['CANNOT_PARSE_BOOL', 467],
  ['UNEXPECTED_DATA_AFTER_PARSED_VALUE', 632],
]);
const NAME_OF_CODE = new Map([...BAD_DATA].map(([name, code]) => [String(code), name]));

/**
 * The engine's name for a bad-data refusal (`CANNOT_PARSE_NUMBER`…), or null when `e` is
 * anything else: an error of another kind, or no ClickHouse error at all.
 */
export function badDataRefusal(e: unknown): string | null {
  if (typeof e !== 'object' || e === null) return null;
  const { type, code } = e as { type?: unknown; code?: unknown };
  if (typeof type === 'string' && type !== '') return BAD_DATA.has(type) ? type : null;
  return typeof code === 'string' || typeof code === 'number' ? (NAME_OF_CODE.get(String(code)) ?? null) : null;
}
