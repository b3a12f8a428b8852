import { z } from 'zod';

/**
 * What an account and its API keys may hold, with the fixture format's rules and messages
 * (../shared/fixtures/README.md): the explorer's staff mutations (src/schema/account-admin.ts,
 * src/schema/api-key-admin.ts) parse their input with these.
 */

/** The owner's email. */
export const accountEmailSchema = z.email({ error: 'must be an email address' });

/** The four capability flags, each optional: a new account has every flag it is not given (the fixture's default); an update leaves it unchanged. */
export const capabilitiesSchema = z
  .object({
    canUseApi: z.boolean().optional(),
    canUserAccount: z.boolean().optional(),
    canBlockList: z.boolean().optional(),
    canUseWebhooks: z.boolean().optional(),
  })
  .strict();

/** A key's name: what its owner calls it (trimmed). */
export const apiKeyNameSchema = z.string().trim().min(1, { error: 'must not be empty' }).max(100, { error: 'must be at most 100 characters' });

/**
 * A key's scopes as asked for: every key reads; `write` is the one scope to ask for (as the spec says of
 * new keys), so the stored list is `['read']` or `['read', 'write']`.
 */
export const apiKeyScopesSchema = z
  .array(z.enum(['read', 'write'], { error: 'must be read or write' }))
  .min(1, { error: 'must name at least one scope' })
  .transform((scopes) => (scopes.includes('write') ? ['read', 'write'] : ['read']));
