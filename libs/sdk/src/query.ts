/**
 * The SDK's parameters → the API's query string: pure rules, no I/O.
 *
 * Parameters are camelCase (`conditionId`, `startDate`) and go out snake_case
 * (`condition_id`, `start_date`). Time windows are `from` / `to` and an instant is `at`,
 * each a Unix time (seconds or ms, as the API reads it) or a Date; dates are `YYYY-MM-DD`
 * strings or Dates (their UTC day).
 */

/** `condition_id` → `conditionId`, at the type level. */
export type Camel<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;

/** A time: Unix seconds or milliseconds (below 10^11 = seconds, as the API reads it), or a Date. */
export type TimeInput = number | Date;
/** A UTC date: `YYYY-MM-DD`, or a Date (its UTC day). */
export type DateInput = string | Date;

/** The API's time parameters and the SDK's names for them. */
const TIME_NAMES = { from: 'start_timestamp', to: 'end_timestamp', at: 'timestamp' } as const;
type TimeRenames = { start_timestamp: 'from'; end_timestamp: 'to'; timestamp: 'at' };
const DATE_KEYS: ReadonlySet<string> = new Set(['date', 'start_date', 'end_date']);

type SdkKey<K extends string> = K extends keyof TimeRenames ? TimeRenames[K] : Camel<K>;
/**
 * Text parameters the document types as strings that are numbers as often as not: the usage
 * routes' `status` (a status code, 429, or a class, 4xx). Every other string parameter is an
 * id or a name (`condition_id`, `ticker`, `asset_id`, `slug`, `cursor`, …) and takes a string
 * only: a number there is a mistake (a condition id is 0x… text, and an asset id is beyond
 * what a JS number holds exactly), so it does not compile.
 */
type NumericText = 'status';
type SdkValue<K, V> = K extends keyof TimeRenames ? TimeInput : K extends 'date' | 'start_date' | 'end_date' ? DateInput : K extends NumericText ? V | number : V;

/**
 * An endpoint's query, as the SDK takes it: camelCase names, `from`/`to`/`at` for times,
 * Dates allowed. Optional stays optional (the mapped type keeps modifiers).
 */
export type SdkQuery<Q> = { [K in keyof Q as SdkKey<K & string>]: SdkValue<K, Q[K]> };

export const snake = (s: string): string => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** `YYYY-MM-DD` of a Date's UTC day, or the string as given. */
export function dateText(d: DateInput): string {
  return d instanceof Date ? d.toISOString().slice(0, 10) : d;
}

/** Unix ms of a Date, or the number as given (the API tells seconds from ms). */
export function timeValue(t: TimeInput): number {
  return t instanceof Date ? t.getTime() : t;
}

export interface QueryOptions {
  /** Whether `from` / `to` / `at` name the API's time parameters (they do on market-data routes; on usage routes `from` / `to` are the API's own names). */
  timeNames?: boolean;
}

/**
 * The query string entries of SDK parameters, in the order given; undefined and null
 * values are left out (the API's default applies).
 */
export function toQuery(params: object, opts: QueryOptions = {}): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null) continue;
    const timeName = opts.timeNames ? TIME_NAMES[k as keyof typeof TIME_NAMES] : undefined;
    const name = timeName ?? snake(k);
    let value: string;
    if (timeName !== undefined) value = String(timeValue(v as TimeInput));
    else if (DATE_KEYS.has(name)) value = dateText(v as DateInput);
    else if (v instanceof Date) value = v.toISOString();
    else value = String(v);
    out.push([name, value]);
  }
  return out;
}
