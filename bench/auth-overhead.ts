// Issue 16: the cost of authenticating a request. One route (a project file's stat: authorize the
// project, read one entry) served three ways by the same process: with no authentication (the
// principal fixed at start), with an API key, and with an OIDC access token (ES256 JWT from
// oidc-provider on loopback). autocannon drives each in turn, interleaved over rounds; the overhead is
// the extra time per request against the unauthenticated route. Target: ≤ 10 % for each.
// BENCH_PRINCIPAL_TTL_MS=0 measures with the principal cache off (every request a full check).

import autocannon from 'autocannon';
import { startTestProvider } from '../test/helpers/oidc-provider.js';
import { startAuthBenchServer } from './lib/auth-server.js';
import { machineInfo, writeResult } from './lib/env.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 5);
const CONNECTIONS = 16;
const AUDIENCE = 'https://strata.bench/api';

type Variant = 'none' | 'api-key' | 'jwt';
/** BENCH_ONLY=jwt (comma-separated) runs only those variants, e.g. under a profiler */
const VARIANTS = (process.env['BENCH_ONLY']?.split(',') ?? ['none', 'api-key', 'jwt']) as Variant[];

interface Run {
  variant: Variant;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
}


async function load(url: string, bearer: string | null): Promise<Omit<Run, 'variant'>> {
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: SECONDS,
    headers: bearer === null ? {} : { authorization: `Bearer ${bearer}` },
  });
  return { requestsPerSecond: result.requests.average, p50Ms: result.latency.p50, p99Ms: result.latency.p99, non2xx: result.non2xx };
}

const provider = await startTestProvider({ audience: AUDIENCE, accessTokenTtlSeconds: 3600 });
const server = await startAuthBenchServer(provider.issuer, AUDIENCE);
try {
  const token = await provider.clientCredentialsToken();
  // First use creates the client's service identity; the owner then makes it a member.
  const me = (await (await fetch(`${server.url}/auth/me`, { headers: { authorization: `Bearer ${token}` } })).json()) as { identity: { identityId: string } };
  const added = await fetch(`${server.url}/v1/orgs/${server.orgId}/members/${me.identity.identityId}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ role: 'member' }),
  });
  if (added.status !== 200) throw new Error(`could not add the bench client: ${added.status}`);

  const targets: Record<Variant, { url: string; bearer: string | null }> = {
    none: { url: `${server.url}/bench/open/${server.projectId}`, bearer: null },
    'api-key': { url: `${server.url}/bench/auth/${server.projectId}`, bearer: server.apiKey },
    jwt: { url: `${server.url}/bench/auth/${server.projectId}`, bearer: token },
  };
  await load(targets.none.url, null); // warm-up: JIT, SQLite caches
  const runs: Run[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const variant of VARIANTS) {
      const run = { variant, ...(await load(targets[variant].url, targets[variant].bearer)) };
      if (run.non2xx > 0) throw new Error(`${variant}: ${run.non2xx} responses were not 2xx`);
      runs.push(run);
      console.log(`round ${round + 1} ${variant.padEnd(8)} ${run.requestsPerSecond.toFixed(0).padStart(6)} req/s  p50 ${run.p50Ms} ms  p99 ${run.p99Ms} ms`);
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const summary: Record<string, unknown> = {};
  const base = median(runs.filter((r) => r.variant === 'none').map((r) => r.requestsPerSecond)) ?? Number.NaN;
  for (const variant of VARIANTS) {
    const mine = runs.filter((r) => r.variant === variant);
    const rps = median(mine.map((r) => r.requestsPerSecond)) ?? Number.NaN;
    // Per round against that round's unauthenticated run: the machine drifts between rounds.
    const paired = mine.map((r, i) => (runs.filter((x) => x.variant === 'none')[i]?.requestsPerSecond ?? Number.NaN) / r.requestsPerSecond - 1);
    summary[variant] = {
      requestsPerSecond: Math.round(rps),
      p50Ms: median(mine.map((r) => r.p50Ms)),
      p99Ms: median(mine.map((r) => r.p99Ms)),
      overheadPercent: Math.round((base / rps - 1) * 1000) / 10,
      pairedOverheadPercent: paired.map((p) => Math.round(p * 1000) / 10),
    };
  }
  console.log(JSON.stringify(summary, null, 2));
  const file = writeResult('auth-overhead', { machine: machineInfo(), rounds: ROUNDS, seconds: SECONDS, connections: CONNECTIONS, runs, summary });
  console.log(`results in ${file}`);
} finally {
  server.child.kill('SIGTERM');
  await provider.close();
}
