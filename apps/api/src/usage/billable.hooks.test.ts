import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { loggedStatus } from './billable.hooks.ts';

describe('the status a billable request is logged (and billed) with', () => {
  it('is a 2xx only for a 2xx answer sent whole; a cut one is 499 (client left) or 500 (its stream failed)', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.integer({ min: 100, max: 599 }), fc.boolean(), fc.boolean(), (headersSent, statusCode, finished, bodyFailed) => {
        const s = loggedStatus({ headersSent, statusCode, finished, bodyFailed });
        const billed = s >= 200 && s < 300;
        expect(billed).toBe(headersSent && finished && statusCode >= 200 && statusCode < 300);
        if (!headersSent) expect(s).toBe(499);
        else if (billed || statusCode < 200 || statusCode >= 300) expect(s).toBe(statusCode);
        else expect(s).toBe(bodyFailed ? 500 : 499);
      }),
    );
  });
});
