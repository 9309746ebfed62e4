import { defineConfig } from 'vitest/config';

// Processes, never threads: the embedded ClickHouse engine is a native addon that must be
// loaded by one thread per process (docs/rules/shape.md).
export default defineConfig({
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
