import type { ConnectSettings } from '../connect/links.js';
import type { PrismaClient } from '../db/prisma.js';

/** An API key caller, as resolved once at authentication. */
export interface ApiKeyViewer {
  kind: 'apiKey';
  accountId: number;
  keyId: number;
  keyName: string;
  scopes: string[];
  connectionScope: 'account' | 'connection';
  /** Set only for connection-scoped keys. */
  connectionId: number | null;
  /** API-enabled, not deleted connections the key reaches, ascending; never empty past authentication. */
  connectionIds: number[];
  capabilities: { canUseApi: boolean; canUserAccount: boolean; canBlockList: boolean; canUseWebhooks: boolean };
}

/** Who is asking: support staff (GraphQL explorer) or an API key (REST facade). */
type Viewer = StaffViewer | ApiKeyViewer;

/** A support staff member, by the name SUPPORT_TOKENS gives their token (audit rows carry it). */
interface StaffViewer {
  kind: 'staff';
  name: string;
}

/** Per-operation context. */
export interface Context {
  prisma: PrismaClient;
  /** The client for heavy reads: its statements are cancelled by PostgreSQL past `queryTimeoutMs`. */
  heavy: PrismaClient;
  queryTimeoutMs: number;
  viewer: Viewer;
  /** Public ingress base URL, to render each source's paste URL. */
  ingressUrl: string;
  /** Secret for signing pagination cursors (derived from ENCRYPTION_KEY). */
  cursorKey: Buffer;
  /** ENCRYPTION_KEY: seals webhook signing secrets. */
  encryptionKey: Buffer;
  /** OUTBOUND_ALLOW_PRIVATE: webhook endpoint URLs may name private and loopback addresses (tests, local demos). */
  outboundAllowPrivate: boolean;
  /** SANDBOX: the service's own origin; endpoint URLs of its sandbox may use http and loopback. */
  sandboxOrigin: string | undefined;
  /** What connect links need (src/connect/links.ts); absent, the connection mutations answer no link. */
  connect?: ConnectSettings;
}

/** The part of the context that does not depend on who asks. */
export type SharedContext = Omit<Context, 'viewer'>;
