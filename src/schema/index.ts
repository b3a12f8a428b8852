import { builder } from './builder.js';
import './scalars.js';
import './account.js';
import './api-key.js';
import './connection.js';
import './source.js';
import './destination.js';
import './reply-relay.js';
import './blocklist.js';
import './webhook-endpoint.js';

/** The GraphQL schema: support staff's explorer, and (later) the core the REST facade executes. */
export const schema = builder.toSchema({ sortSchema: true });
