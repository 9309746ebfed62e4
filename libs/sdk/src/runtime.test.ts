/**
 * The SDK runs in browsers as well as Node: its runtime code uses only fetch, URL and
 * AbortSignal. Checked two ways: no module outside the package is imported at run time,
 * and the code typechecks with DOM types and without Node's.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(SRC, '../../..');
const runtimeFiles = readdirSync(SRC).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));

describe('the SDK runtime code', () => {
  it('imports nothing but its own modules at run time', () => {
    expect(runtimeFiles).toContain('client.ts');
    for (const f of runtimeFiles) {
      const text = readFileSync(path.join(SRC, f), 'utf8');
      for (const m of text.matchAll(/^\s*(import|export)\s+(type\s+)?[^;]*?from\s+'([^']+)'/gms)) {
        const [, , isType, spec] = m;
        if (isType) continue;
        expect(spec, `${f} imports ${spec}`).toMatch(/^\.\//);
      }
      expect(text, f).not.toMatch(/\bprocess\.|\bBuffer\b|require\(/);
    }
  });

  it('typechecks as browser code (DOM lib, no Node types)', () => {
    const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
    execFileSync(process.execPath, [tsc, '-p', path.join(ROOT, 'libs/sdk/tsconfig.browser.json'), '--noEmit'], { stdio: 'pipe' });
  }, 60_000);
});
