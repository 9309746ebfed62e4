/**
 * The committed OpenAPI document and the types generated from it are what the app produces
 * now. When this fails, a route's schema changed: run `npm run generate -w @booktape/client`
 * and commit both files (and adapt the SDK's surface if the change calls for it).
 */
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument, committed, documentText, typesText } from '../scripts/openapi-document.ts';

describe('generated OpenAPI document and types', () => {
  it('match what the app and openapi-typescript produce now', async () => {
    const doc = await buildOpenApiDocument();
    const hint = 'stale: run `npm run generate -w @booktape/client` and commit libs/sdk/openapi.json and libs/sdk/src/generated/schema.ts';
    expect(committed.document() === documentText(doc), `libs/sdk/openapi.json is ${hint}`).toBe(true);
    expect(committed.types() === await typesText(doc), `libs/sdk/src/generated/schema.ts is ${hint}`).toBe(true);
  }, 60_000);
});
