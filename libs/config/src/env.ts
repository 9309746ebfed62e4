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
    return `${name}: ${i.message}${value === undefined ? '' : ` (got ${JSON.stringify(value)})`}`;
  });
  throw new ConfigError(issues);
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
