// Issue 16: rate limiting under a flood. One key floods the server (8 connections in a process of
// its own, far over its limit); a second key keeps making normal requests at the same time. Figures: the p99 latency of the
// 429s the flooding key gets (target ≤ 1 ms), and the other key's latency during the flood against
// the same key alone (target: unchanged). Same route and server as bench/auth-overhead.ts.

import { spawn } from 'node:child_process';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { startTestProvider } from '../test/helpers/oidc-provider.js';
import { startAuthBenchServer } from './lib/auth-server.js';
import { machineInfo, writeResult } from './lib/env.js';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 8);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const LIMIT = '200/10s';


const FLOOD_CONNECTIONS = Number(process.env['BENCH_FLOOD_CONNECTIONS'] ?? 8);

function run(url: string, key: string, connections: number, rate?: number) {
  return autocannon({ url, connections, duration: SECONDS, headers: { authorization: `Bearer ${key}` }, ...(rate === undefined ? {} : { overallRate: rate }) });
}

/** The flood runs in a process of its own: sharing this event loop would delay the measured client. */
async function flood(url: string, key: string): Promise<autocannon.Result> {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'load-child.js'), url, key, String(FLOOD_CONNECTIONS), String(SECONDS)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  await new Promise((resolve) => child.on('close', resolve));
  return JSON.parse(out) as autocannon.Result;
}

const provider = await startTestProvider({ audience: 'https://strata.bench/api' });
const server = await startAuthBenchServer(provider.issuer, 'https://strata.bench/api', { ...process.env, BENCH_RATE_LIMIT: LIMIT });
try {
  // Fresh keys per round, so every round starts with empty buckets.
  const newKey = async (purpose: string) => {
    const response = await fetch(`${server.url}/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ purpose, role: 'member' }),
    });
    return ((await response.json()) as { apiKey: string }).apiKey;
  };
  const url = `${server.url}/bench/auth/${server.projectId}`;
  const rounds: Array<Record<string, number>> = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    // The normal key alone: 15 requests/s, inside its limit of 200 per 10 s for the whole run.
    const alone = await run(url, await newKey(`alone-${round}`), 1, 15);
    const flooder = await newKey(`flood-${round}`);
    const normal = await newKey(`normal-${round}`);
    const [flooded, during] = await Promise.all([flood(url, flooder), run(url, normal, 1, 15)]);
    const figures = {
      floodRequestsPerSecond: Math.round(flooded.requests.average),
      flood429: flooded.statusCodeStats?.['429']?.count ?? 0,
      flood2xx: flooded['2xx'],
      floodP50Ms: flooded.latency.p50,
      floodP99Ms: flooded.latency.p99,
      normalAloneP50Ms: alone.latency.p50,
      normalAloneP99Ms: alone.latency.p99,
      normalDuringP50Ms: during.latency.p50,
      normalDuringP99Ms: during.latency.p99,
      normalDuringNon2xx: during.non2xx,
    };
    rounds.push(figures);
    console.log(`round ${round + 1}`, JSON.stringify(figures));
  }
  const file = writeResult('rate-limit-flood', { machine: machineInfo(), limit: LIMIT, seconds: SECONDS, floodConnections: FLOOD_CONNECTIONS, rounds });
  console.log(`results in ${file}`);
} finally {
  server.child.kill('SIGTERM');
  await provider.close();
}
