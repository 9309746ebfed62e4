#!/usr/bin/env node
// The CLI is TypeScript run through tsx, so `npx booktape` needs no build step.
let register;
try {
  ({ register } = await import('tsx/esm/api'));
} catch (e) {
  if (e?.code !== 'ERR_MODULE_NOT_FOUND') throw e;
  // Run as `node apps/cli/bin/booktape.mjs` in a fresh clone: say what is missing, not a stack.
  const root = new URL('../../..', import.meta.url).pathname;
  console.error(`booktape: the npm dependencies are not installed; run \`npm install\` in ${root} first`);
  process.exit(1);
}
register();
await import('../src/cli.ts');
