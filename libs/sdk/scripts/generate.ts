/**
 * Regenerates libs/sdk/openapi.json from the API's own routes and the SDK's types from it:
 * `npm run generate -w @booktape/client`. A test (openapi-drift.int.test.ts) fails when
 * either committed file differs from what this writes.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DOCUMENT_PATH, TYPES_PATH, buildOpenApiDocument, documentText, typesText } from './openapi-document.ts';

const doc = await buildOpenApiDocument();
writeFileSync(DOCUMENT_PATH, documentText(doc));
mkdirSync(path.dirname(TYPES_PATH), { recursive: true });
writeFileSync(TYPES_PATH, await typesText(doc));
console.log(`wrote ${path.relative(process.cwd(), DOCUMENT_PATH)} and ${path.relative(process.cwd(), TYPES_PATH)}`);
