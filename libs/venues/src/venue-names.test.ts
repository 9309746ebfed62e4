import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Venue names are compared only inside the venue registry (issue 23, point 5): everything
 * else looks the venue up (venueModule, or a table keyed by venue next to the code that
 * needs it). This counts, over the source tree outside libs/venues and outside tests, the
 * lines that compare with a venue name literal (===, !==, case) — the same lines as
 *   grep -rnE "'exchange-(a|b)'" --include=*.ts apps libs scripts | grep -v "\.test\.\|test-support\|libs/venues/" | grep -E "===|!==|case "
 * Each line that must stay says why in a comment; a new one fails here.
 */
const ALLOWED = 0;

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', 'coverage']);

function* tsFiles(dir: string): Generator<string> {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (!SKIP_DIRS.has(e.name)) yield* tsFiles(p);
    } else if (e.isFile() && e.name.endsWith('.ts')) yield p;
  }
}

function venueNameComparisons(root = ROOT): string[] {
  const out: string[] = [];
  for (const top of ['apps', 'libs', 'scripts']) {
    for (const file of tsFiles(path.join(root, top))) {
      const rel = path.relative(root, file).split(path.sep).join('/');
      if (/\.test\.|test-support/.test(rel) || rel.startsWith('libs/venues/')) continue;
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (/'exchange-(a|b)'/.test(line) && /===|!==|case /.test(line)) out.push(`${rel}:${i + 1}: ${line.trim()}`);
        });
    }
  }
  return out;
}

describe('venue names outside the registry', () => {
  it(`are compared on at most ${ALLOWED} lines`, () => {
    const lines = venueNameComparisons();
    expect(lines.length, `compare venues through the registry (libs/venues/src/registry.ts) instead:\n${lines.join('\n')}`).toBeLessThanOrEqual(ALLOWED);
  });

  it('counts a comparison outside the registry and tests, and nothing else', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'venue-names-'));
    try {
      const put = (rel: string, text: string) => {
        mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
        writeFileSync(path.join(root, rel), text);
      };
      put('apps/api/src/x.ts', "const a = v === 'exchange-a';\nconst b = v !== 'exchange-b';\nswitch (v) {\n  case 'exchange-a':\n}\nconst list = ['exchange-a'];\n");
      put('apps/api/src/x.test.ts', "const a = v === 'exchange-a';\n");
      put('libs/storage/src/x.test-support.ts', "const a = v === 'exchange-a';\n");
      put('libs/venues/src/registry.ts', "const a = v === 'exchange-a';\n");
      put('libs/storage/node_modules/y/index.ts', "const a = v === 'exchange-a';\n");
      put('scripts/y.mjs', "const a = v === 'exchange-a';\n");
      expect(venueNameComparisons(root)).toEqual([
        "apps/api/src/x.ts:1: const a = v === 'exchange-a';",
        "apps/api/src/x.ts:2: const b = v !== 'exchange-b';",
        "apps/api/src/x.ts:4: case 'exchange-a':",
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
