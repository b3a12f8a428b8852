import { builder } from './builder.js';
import './scalars.js';
import './account.js';
import './api-key.js';
import './connection.js';
import './source.js';
import './destination.js';
import './reply-relay.js';
import './blocklist.js';
import './blocklist-actions.js';
import './audit.js';
import './webhook-endpoint.js';
import './me.js';
import './account-status.js';
import './request.js';
import './sync.js';
import './delivery.js';
import './account-metrics.js';
import './outreach.js';
import './sync-retry.js';
import './sync-bulk-retry.js';
import './delivery-replay.js';
import './platform-event.js';
import './webhook-delivery.js';
import './relay-execution.js';
import './request-lineage.js';

/** The GraphQL schema: support staff's explorer, and (later) the core the REST facade executes. */
export const schema = builder.toSchema({ sortSchema: true });
