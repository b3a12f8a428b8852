import { z } from 'zod';
import { secret } from '../schema-fields.js';

/**
 * An Attio connection's decrypted credentials: a bearer token, a workspace API key or an OAuth app's access
 * token alike. Attio documents no refresh grant: a refused token needs the customer to reconnect.
 */
export const attioCredentials = z.object({ accessToken: secret });
export type AttioCredentials = z.infer<typeof attioCredentials>;
