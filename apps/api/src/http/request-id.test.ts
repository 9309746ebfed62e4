import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { IncomingMessage } from 'node:http';
import { genRequestId, incomingRequestId } from './request-id.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const raw = (headers: Record<string, string | string[]>) => ({ headers }) as unknown as IncomingMessage;

describe('X-Request-Id', () => {
  it('keeps a well-formed incoming id as it is', () => {
    const idChar = fc.constantFrom(...'ABCXYZabcxyz0189._:@/+=-'.split(''));
    fc.assert(
      fc.property(fc.array(idChar, { minLength: 1, maxLength: 128 }), (chars) => {
        const id = chars.join('');
        expect(incomingRequestId(id)).toBe(id);
        expect(genRequestId(raw({ 'x-request-id': id }))).toBe(id);
      }),
    );
  });

  it('makes a UUID when the id is missing, repeated, empty, too long or could break a log line', () => {
    for (const bad of [undefined, '', 'a'.repeat(129), 'has space', 'quote"', 'new\nline', 'tab\t', 'ü', 'a,b', ['a', 'b']]) {
      const headers: Record<string, string | string[]> = bad === undefined ? {} : { 'x-request-id': bad };
      expect(incomingRequestId(bad), String(bad)).toBeUndefined();
      expect(genRequestId(raw(headers))).toMatch(UUID);
    }
    expect(genRequestId(raw({}))).not.toBe(genRequestId(raw({})));
  });
});
