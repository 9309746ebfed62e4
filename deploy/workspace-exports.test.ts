import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Each workspace package exports its built dist/ by default (what Node resolves in the
 * production image) and its TypeScript source under the booktape-source condition (what
 * vitest resolves); tsconfig.json's paths give tsc and tsx the same sources. The three must
 * name the same files, or development and production would run different modules.
 */
const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
const tsconfig = JSON.parse(readFileSync(path.join(REPO_ROOT, 'tsconfig.json'), 'utf8')) as { compilerOptions: { paths: Record<string, string[]> } };

type Target = string | Record<string, string>;
const packages = ['apps', 'libs'].flatMap((group) =>
  readdirSync(path.join(REPO_ROOT, group)).map((name) => {
    const dir = `${group}/${name}`;
    const manifest = JSON.parse(readFileSync(path.join(REPO_ROOT, dir, 'package.json'), 'utf8')) as { name: string; exports?: Record<string, Target> };
    return { dir, manifest };
  }),
);

describe('workspace package exports', () => {
  it('map each entry to its source under booktape-source and to the matching dist/ file by default', () => {
    const mapped: string[] = [];
    for (const { dir, manifest } of packages) {
      for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
        const where = `${manifest.name} ${subpath}`;
        expect(typeof target, where).toBe('object');
        const t = target as Record<string, string>;
        // The source condition first: condition order in exports decides, not the resolver's list.
        expect(Object.keys(t)[0], where).toBe('booktape-source');
        const source = t['booktape-source']!;
        expect(source, where).toMatch(/^\.\/src\/.+\.ts$/);
        const built = `./dist/${source.slice('./src/'.length, -'.ts'.length)}.js`;
        expect(t.default, where).toBe(built);
        if (t.import !== undefined) expect(t.import, where).toBe(built);
        if (t.types !== undefined) expect(t.types, where).toBe(built.replace(/\.js$/, '.d.ts'));
        const specifier = manifest.name + subpath.slice(1);
        expect(tsconfig.compilerOptions.paths[specifier], `tsconfig.json paths ${specifier}`).toEqual([`./${dir}/${source.slice(2)}`]);
        mapped.push(specifier);
      }
    }
    // And no paths entry points anywhere else.
    expect(Object.keys(tsconfig.compilerOptions.paths).sort()).toEqual(mapped.sort());
  });

  it('keep every package but the published SDK private', () => {
    for (const { manifest } of packages) expect(manifest, manifest.name).toMatchObject(manifest.name === '@booktape/client' ? {} : { private: true });
    expect((packages.find((p) => p.manifest.name === '@booktape/client')!.manifest as { private?: boolean }).private).toBeUndefined();
  });
});
