/**
 * The `--burst` role of bench:ingress: POSTs a campaign (test/support/campaign.ts: five events per lead,
 * in waves) to the ingress as fast as it takes them, over keep-alive connections.
 */
import http from 'node:http';
import readline from 'node:readline';
import { campaignBodies, type Campaign } from '../test/support/campaign.js';
import { pct } from './support.js';

/** What `--burst` is told: where to POST, which campaign, over how many keep-alive connections. */
export interface BurstSpec {
  port: number;
  /** The sources' ingress paths; events go to them in turn. */
  paths: string[];
  campaign: Campaign;
  connections: number;
}

export interface BurstResult {
  startedAt: number;
  seconds: number;
  ok: number;
  failed: number;
  p50: number;
  p99: number;
}

/** `--burst`: one campaign per line of stdin, POSTed as fast as the ingress takes it; one JSON line of results each. */
export async function burstRole(): Promise<void> {
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const spec = JSON.parse(line) as BurstSpec;
    process.stdout.write(`${JSON.stringify(await burst(spec))}\n`);
  }
}

async function burst(spec: BurstSpec): Promise<BurstResult> {
  const bodies = campaignBodies(spec.campaign);
  const agent = new http.Agent({ keepAlive: true, maxSockets: spec.connections });
  const latencies: number[] = [];
  let [next, ok, failed] = [0, 0, 0];
  const startedAt = Date.now();
  const sender = async () => {
    while (next < bodies.length) {
      const i = next++;
      const started = performance.now();
      const status = await post(agent, spec.port, spec.paths[i % spec.paths.length]!, bodies[i]!);
      latencies.push(performance.now() - started);
      if (status === 200) ok += 1;
      else failed += 1;
    }
  };
  await Promise.all(Array.from({ length: spec.connections }, sender));
  agent.destroy();
  return { startedAt, seconds: (Date.now() - startedAt) / 1000, ok, failed, p50: pct(latencies, 0.5), p99: pct(latencies, 0.99) };
}

function post(agent: http.Agent, port: number, path: string, body: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request(
      { host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(0));
      },
    );
    req.on('error', () => resolve(0));
    req.end(body);
  });
}
