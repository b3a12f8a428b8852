/**
 * `npm run bench:rate-limit`: what the rate limiters cost per request (issue 4: "well under a
 * millisecond per request at the median").
 *
 * On a throwaway embedded PostgreSQL with its default durability (the limiter's own sessions commit
 * asynchronously, as in production): (1) each counter statement timed alone, one at a time, as the
 * middleware issues it; (2) GET /api/v1/me over keep-alive HTTP against two instances of the real app
 * on one database, one with the limits on (never reached) and one with them off, alternating request
 * by request so both see the same machine. The difference of the medians is the limiter's cost on a
 * general route (per-IP check + per-account check).
 *
 * Environment: BENCH_SAMPLES (default 5000).
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { seedFixture } from '../src/admin/seed.js';
import { createPrisma } from '../src/db/prisma.js';
import { RateLimitStore } from '../src/db/rate-limit-store.js';
import { ApiClient, cleanups, envNumber, fmt, log, ms, out, pct, runBench, startBenchApp, throwawayDatabase } from './support.js';

const SAMPLES = Math.round(envNumber('BENCH_SAMPLES', 5_000));
const WARMUP = Math.max(100, Math.round(SAMPLES / 10));
const KEY = 'svcapi_benchRateLimitKey00000000000001';
const TARGET_MS = 1;

async function run(): Promise<number> {
  const db = await throwawayDatabase();
  const encryptionKey = randomBytes(32);
  const prisma = createPrisma(db.url);
  cleanups.push(() => prisma.$disconnect());
  await seedFixture(prisma, fixture(), encryptionKey);

  // (1) The statements alone, as the middleware issues them; many accounts and addresses, as in production.
  const store = new RateLimitStore(db.url);
  cleanups.push(() => store.close());
  const statements = {
    'per-IP (fixed window)': (i: number) => store.hitFixedWindow(`ip:10.0.${(i >> 8) & 255}.${i & 255}`, 1_000_000_000),
    'per-account (sliding, per-second counts)': (i: number) => store.hitSlidingWindow(`account:${i % 50}`, 120),
    'outreach (fixed window)': (i: number) => store.hitFixedWindow(`outreach:${i % 50}`, 1_000_000_000),
  };
  const statementTimes: [string, number[]][] = [];
  for (const [name, hit] of Object.entries(statements)) {
    for (let i = 0; i < WARMUP; i += 1) await hit(i);
    const times: number[] = [];
    for (let i = 0; i < SAMPLES; i += 1) {
      const start = performance.now();
      await hit(i);
      times.push(performance.now() - start);
    }
    statementTimes.push([name, times]);
  }

  // (2) The same app with the limits on and off, alternating.
  const on = await startBenchApp(db.url, encryptionKey);
  const off = await startBenchApp(db.url, encryptionKey, { RATE_LIMIT_PER_IP: '0', RATE_LIMIT_PER_ACCOUNT: '0', RATE_LIMIT_OUTREACH: '0' });
  const clients = { on: new ApiClient(on.port, KEY), off: new ApiClient(off.port, KEY) };
  cleanups.push(async () => {
    clients.on.close();
    clients.off.close();
    await on.close();
    await off.close();
  });
  const times: Record<'on' | 'off', number[]> = { on: [], off: [] };
  for (let i = 0; i < WARMUP + SAMPLES; i += 1) {
    for (const which of i % 2 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
      const start = performance.now();
      await clients[which].get('/api/v1/me');
      if (i >= WARMUP) times[which].push(performance.now() - start);
    }
  }

  out(`bench:rate-limit  ${fmt(SAMPLES)} samples each (${os.cpus().length} CPUs, Node ${process.version}; PostgreSQL with default durability)`);
  out('');
  out('counter statement                       p50 ms   p95 ms');
  for (const [name, times] of statementTimes) out(`  ${name.padEnd(37)} ${ms(pct(times, 0.5)).padStart(6)}   ${ms(pct(times, 0.95)).padStart(6)}`);
  out('');
  const [onP50, offP50] = [pct(times.on, 0.5), pct(times.off, 0.5)];
  out('GET /api/v1/me                          p50 ms   p95 ms');
  out(`  limits on (per IP + per account)      ${ms(onP50).padStart(6)}   ${ms(pct(times.on, 0.95)).padStart(6)}`);
  out(`  limits off                            ${ms(offP50).padStart(6)}   ${ms(pct(times.off, 0.95)).padStart(6)}`);
  const cost = onP50 - offP50;
  out('');
  out(`limiter cost per general request at the median: ${ms(cost)} ms (target < ${TARGET_MS} ms): ${cost < TARGET_MS ? 'PASS' : 'FAIL'}`);
  return cost < TARGET_MS ? 0 : 1;
}

function fixture() {
  return {
    accounts: [
      {
        ref: 'bench',
        email: 'owner@bench.example',
        connections: [{ ref: 'c', crm: 'HUBSPOT', organizationId: 'org', organizationDomain: 'bench.example', sources: [{ ref: 's', platform: 'smartlead' }] }],
        apiKeys: [{ ref: 'k', name: 'bench', key: KEY }],
      },
    ],
  };
}

log('bench:rate-limit');
await runBench('bench:rate-limit', run);
