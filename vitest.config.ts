import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// Processes, never threads: the embedded ClickHouse engine is a native addon that must be
// loaded by one thread per process (docs/rules/shape.md).
export default defineConfig({
  // Workspace packages published to outside users (@booktape/client) export their built
  // dist/ by default and their TypeScript sources under this condition: tests run on the
  // sources, with no build first (tsc and tsx get the same through tsconfig.json's paths).
  ssr: { resolve: { conditions: [...defaultServerConditions, 'booktape-source'] } },
  test: {
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['{apps,libs}/*/src/**/*.test.ts', 'deploy/**/*.test.ts'],
          exclude: ['**/*.int.test.ts', '**/node_modules/**'],
          testTimeout: 30_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'int',
          // clients/*/tests: the other languages' clients, run against the real API from vitest.
          include: ['{apps,libs}/*/src/**/*.int.test.ts', 'clients/*/tests/**/*.int.test.ts'],
          exclude: ['**/node_modules/**'],
          testTimeout: 180_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
