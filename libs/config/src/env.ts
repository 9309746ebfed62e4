import { z } from 'zod';

/**
 * Parse the environment once, at start, against an app's schema. A bad or malformed
 * variable stops the process with a message that names it (thrown as ConfigError so the
 * composition root decides how to exit; tests assert on the message).
 */
export class ConfigError extends Error {
  constructor(readonly issues: string[]) {
    super(`invalid configuration:\n  - ${issues.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

export function parseEnv<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const issues = result.error.issues.map((i) => {
    const name = i.path.join('.') || '(environment)';
    const value = i.path.length === 1 ? env[String(i.path[0])] : undefined;
    const shown = value === undefined ? undefined : shownValue(name, value);
    return `${name}: ${i.message}${shown === undefined ? '' : ` (got ${shown})`}`;
  });
  throw new ConfigError(issues);
}

/** Names of variables that hold secrets: their values never reach a message or a log. */
const SECRET_NAME = /SECRET|PASSWORD|PASSWD|TOKEN|PRIVATE|CREDENTIAL|(^|_)KEY(_|$)/i;

/**
 * What a configuration error may show of a rejected value: nothing for a secret's name;
 * for anything else its text, with the user-info part of a URL-like value (`user:pass@`)
 * replaced, since connection URLs carry passwords. Configuration errors end up in logs.
 */
function shownValue(name: string, value: string): string | undefined {
  if (SECRET_NAME.test(name)) return undefined;
  const redacted = redactUrl(value);
  return JSON.stringify(redacted.length > 200 ? `${redacted.slice(0, 200)}…` : redacted);
}

/** Helpers for env values, which are always strings. Empty strings count as unset. */
const unsetEmpty = (v: unknown) => (v === '' ? undefined : v);

export const envInt = (def: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  z.preprocess(
    unsetEmpty,
    z
      .string()
      .regex(/^-?\d+$/, 'must be an integer')
      .transform(Number)
      .pipe(z.number().int().min(min).max(max))
      .default(def),
  ) as unknown as z.ZodType<number>;

export const envBool = (def: boolean) =>
  z.preprocess(
    unsetEmpty,
    z
      .enum(['1', '0', 'true', 'false', 'yes', 'no', 'on', 'off'], { message: 'must be true or false' })
      .transform((v) => ['1', 'true', 'yes', 'on'].includes(v))
      .default(def),
  ) as unknown as z.ZodType<boolean>;

export const envString = (def: string) => z.preprocess(unsetEmpty, z.string().default(def)) as unknown as z.ZodType<string>;

export const envOptional = () => z.preprocess(unsetEmpty, z.string().optional()) as unknown as z.ZodType<string | undefined>;

export const envList = (def: string[] = []) =>
  z.preprocess(
    unsetEmpty,
    z
      .string()
      .optional()
      .transform((v) => (v === undefined ? def : v.split(',').map((s) => s.trim()).filter(Boolean))),
  ) as unknown as z.ZodType<string[]>;

export const envUrl = (def: string | undefined, protocols: string[]) =>
  z.preprocess(
    unsetEmpty,
    z
      .string()
      .refine((v) => {
        try {
          return protocols.includes(new URL(v).protocol.replace(':', ''));
        } catch {
          return false;
        }
      }, `must be a ${protocols.join(' or ')} URL`)
      .optional()
      .transform((v) => v ?? def),
  ) as unknown as z.ZodType<string | undefined>;

/** A connection URL (or URL-like text) fit for a message: its user-info (`user:pass@`) replaced. */
export function redactUrl(value: string): string {
  return value.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^@]*@/i, (_m, scheme: string | undefined) => `${scheme ?? ''}***@`);
}
