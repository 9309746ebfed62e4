import { z } from 'zod';

/** Answers of the key management routes. */

export const keyCreated = z.object({
  success: z.boolean(),
  data: z.object({
    key_id: z.string(),
    api_key: z.string().describe('The full key. Shown only in this response.'),
    user_id: z.string(),
    name: z.string(),
    created_at: z.string(),
  }),
}).describe('The key was created: `data.api_key` is the full key, shown only here.');
export const keyList = z.object({
  user_id: z.string(),
  api_keys: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      status: z.enum(['active', 'revoked']),
      created_at: z.string(),
      last_used_at: z.string().nullable(),
    }),
  ),
  total: z.number().int(),
}).describe("The user's active keys (never the keys themselves).");
export const keyRevoked = z.object({
  success: z.boolean(),
  data: z.object({ key_id: z.string(), status: z.enum(['active', 'revoked']), revoked_at: z.string().nullable() }),
}).describe('The key is revoked: requests with it get 403 from now on.');
