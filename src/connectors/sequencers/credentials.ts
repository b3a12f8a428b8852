import { z } from 'zod';

/**
 * A sequencer API key, as every sequencer's credentials schema (`<platform>/definition.ts`) takes it.
 * Custom messages only: a message must never quote the key.
 */
export const apiKey = z
  .string({ error: 'is required (a string)' })
  .min(1, { error: 'must not be empty' })
  .max(512, { error: 'must be at most 512 characters' })
  .regex(/^\S*$/, { error: 'must not contain spaces' });
