#!/usr/bin/env node
// The CLI is TypeScript run through tsx, so `npx booktape` needs no build step.
import { fileURLToPath } from 'node:url';

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
// The repository's tsconfig.json, wherever the command is run from: its `paths` give the
// workspace the SDK's TypeScript sources rather than its (unbuilt) dist/.
register({ tsconfig: fileURLToPath(new URL('../../../tsconfig.json', import.meta.url)) });
await import('../src/cli.ts');
