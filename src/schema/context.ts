import type { PrismaClient } from '../db/prisma.js';

/** Who is asking. Only support staff reach the GraphQL explorer; REST callers arrive with their key. */
export type Viewer = { kind: 'staff' };

/** Per-operation context. */
export interface Context {
  prisma: PrismaClient;
  viewer: Viewer;
  /** Public ingress base URL, to render each source's paste URL. */
  ingressUrl: string;
}
