import type { Request, RequestHandler, Response } from 'express';
import type { Config } from '../config.js';
import type { RateLimitStore } from '../db/rate-limit-store.js';
import type { RateLimitDecision } from '../domain/rate-limit.js';
import { sendError } from '../http/errors.js';
import type { Logger } from '../logger.js';
import type { ApiKeyViewer } from '../schema/context.js';

/** Which rate limits a route is under (spec: Limits). */
export type RateBucket = 'general' | 'outreach';

export interface RateLimiters {
  /**
   * Per IP, fixed window (general and discovery routes). Started before the key is looked at and
   * answered before the key's verdict: `await limits.perIp(req)` then `answerPerIp(decision, res)`.
   */
  perIp: (req: Request) => Promise<RateLimitDecision | null>;
  /** Per account, sliding window, after key validation; sets the X-RateLimit-* headers (general routes). */
  perAccount: RequestHandler;
  /** Per account, fixed window, its own bucket, no X-RateLimit-* headers (contacts/outreach). */
  outreach: RequestHandler;
}

/**
 * The three limiters. A limit of 0 is off. If the counter store fails, the request goes through and the
 * failure is logged: the limits protect the service, and a request the database cannot count is one it
 * will most likely fail to answer anyway.
 */
export function rateLimiters(store: RateLimitStore, limits: Config['rateLimits'], logger: Logger): RateLimiters {
  const counted = async (hit: () => Promise<RateLimitDecision>): Promise<RateLimitDecision | null> => {
    try {
      return await hit();
    } catch (error) {
      logger.warn({ err: error }, 'rate limit check failed; request let through');
      return null;
    }
  };
  const middleware = (
    limit: number,
    hit: (res: Response) => Promise<RateLimitDecision>,
    answer: (d: RateLimitDecision, res: Response) => boolean,
  ): RequestHandler => {
    if (limit === 0) return (_req, _res, next) => next();
    return async (_req, res, next) => {
      const decision = await counted(() => hit(res));
      if (!decision || answer(decision, res)) next();
    };
  };

  return {
    perIp: (req) => (limits.perIp === 0 ? Promise.resolve(null) : counted(() => store.hitFixedWindow(`ip:${req.ip ?? 'unknown'}`, limits.perIp))),
    perAccount: middleware(
      limits.perAccount,
      (res) => store.hitSlidingWindow(`account:${viewerOf(res).accountId}`, limits.perAccount),
      (decision, res) => {
        res.set({
          'X-RateLimit-Limit': String(decision.limit),
          'X-RateLimit-Remaining': String(decision.remaining),
          'X-RateLimit-Reset': String(decision.resetSeconds),
        });
        return passOr429(decision, res, 'Too many requests for this account');
      },
    ),
    outreach: middleware(
      limits.outreach,
      (res) => store.hitFixedWindow(`outreach:${viewerOf(res).accountId}`, limits.outreach),
      (decision, res) => passOr429(decision, res, 'Too many outreach lookups for this account'),
    ),
  };
}

/** True to go on; otherwise the per-IP 429 (Retry-After only) has been sent. */
export function answerPerIp(decision: RateLimitDecision | null, res: Response): boolean {
  return !decision || passOr429(decision, res, 'Too many requests from this IP address');
}

/** A middleware form of the per-IP limit, for routes that need no key. */
export function perIpMiddleware(limits: RateLimiters): RequestHandler {
  return async (req, res, next) => {
    if (answerPerIp(await limits.perIp(req), res)) next();
  };
}

/** True to go on; otherwise answers the 429 with Retry-After in whole seconds. */
function passOr429(decision: RateLimitDecision, res: Response, what: string): boolean {
  if (decision.allowed) return true;
  res.set('Retry-After', String(decision.resetSeconds));
  sendError(res, 429, `${what}: the limit is ${decision.limit} requests per 60 seconds. Retry after ${decision.resetSeconds} seconds.`);
  return false;
}

function viewerOf(res: Response): ApiKeyViewer {
  return res.locals.viewer as ApiKeyViewer;
}
