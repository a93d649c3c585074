// Benchmark 4: the first page (100) of the history of a path with 100,000 versions: in process and over
// HTTP. Peer for context: `git log -n 100 -- path` on a repository with 2,000 commits of one path (a
// 100,000-commit repository takes too long to build for each run); Strata is also measured on a
// 2,000-version path so the two can be compared at equal length.
import { BENCH_TMP, freshDir, machineInfo, removeDir, writeResult } from './lib/env.js';
import { git } from './lib/git.js';
import { HttpClient } from './lib/http.js';
import { runPool } from './lib/pool.js';
import { timed } from './lib/proc.js';
import { percentile, round3, target } from './lib/stats.js';
import { BENCH_ACTOR, bootstrapBenchHome, httpUnavailable, openBenchEngine, startServerChild } from './lib/strata.js';
import { printTable, printTargets } from './lib/table.js';

const VERSIONS = Number(process.env['BENCH_HISTORY_VERSIONS'] ?? 100_000);
const SHORT_VERSIONS = 2_000;
const QUERIES = 200;
const WARMUP = 5;
const GIT_QUERIES = 20;
const IN_FLIGHT = 1000;
const LONG_PATH = 'notes/long-log.txt';
const SHORT_PATH = 'notes/short-log.txt';

interface Latency {
  p50: number;
  p95: number;
  min: number;
  max: number;
  n: number;
}

/** `query` run WARMUP times untimed, then `n` times; latencies in ms. */
async function latencies(n: number, query: () => Promise<unknown>): Promise<Latency> {
  for (let i = 0; i < WARMUP; i++) await query();
  const samples: number[] = [];
  for (let i = 0; i < n; i++) samples.push((await timed(query)) * 1000);
  samples.sort((a, b) => a - b);
  return { p50: round3(percentile(samples, 50)), p95: round3(percentile(samples, 95)), min: round3(samples[0]!), max: round3(samples.at(-1)!), n };
}

async function writeVersions(write: (i: number) => Promise<unknown>, count: number): Promise<number> {
  return timed(() => runPool(count, IN_FLIGHT, write));
}

async function gitPeer(): Promise<Latency> {
  const repo = freshDir('history-git');
  await git(repo, ['init', '-q', '-b', 'main']);
  // fast-import builds 2,000 commits in a second; `git commit` in a loop would take minutes.
  const parts: string[] = [];
  for (let i = 0; i < SHORT_VERSIONS; i++) {
    const content = `entry ${i}\n`;
    const message = `v${i}\n`;
    parts.push(
      `commit refs/heads/main\ncommitter bench <bench@example.com> ${1_700_000_000 + i} +0000\ndata ${message.length}\n${message}` +
        `M 100644 inline ${SHORT_PATH}\ndata ${content.length}\n${content}\n`,
    );
  }
  await git(repo, ['fast-import', '--quiet'], { input: parts.join('') });
  const result = await latencies(GIT_QUERIES, () => git(repo, ['log', '-n', '100', '--format=%H', 'main', '--', SHORT_PATH]));
  const lines = (await git(repo, ['log', '-n', '100', '--format=%H', 'main', '--', SHORT_PATH])).trim().split('\n');
  if (lines.length !== 100) throw new Error(`git log returned ${lines.length} commits`);
  removeDir(repo);
  return result;
}

async function main(): Promise<void> {
  const machine = machineInfo();
  console.log(`history-100k: ${VERSIONS} versions of one path, ${QUERIES} queries, scratch ${BENCH_TMP}`);
  const httpReason = httpUnavailable();
  const home = freshDir('history-strata-home');
  // The HTTP variant needs an API key, so the home is bootstrapped first and the project goes in its org.
  const boot = httpReason === null ? await bootstrapBenchHome(home) : null;
  const bench = await openBenchEngine(home, boot?.orgId);
  const { engine } = bench.local;
  const { projectId } = bench;
  const write = (path: string) => (i: number) => engine.writeFile({ projectId, path, actor: BENCH_ACTOR, content: Buffer.from(`entry ${i}\n`) });
  const writeSeconds = await writeVersions(write(LONG_PATH), VERSIONS);
  console.log(`  wrote ${VERSIONS} versions of ${LONG_PATH} in ${writeSeconds.toFixed(1)} s (${(VERSIONS / writeSeconds).toFixed(0)} versions/s)`);
  await writeVersions(write(SHORT_PATH), SHORT_VERSIONS);

  const firstPage = async (path: string) => {
    const page = await engine.history({ projectId, path, limit: 100 });
    if (page.items.length !== 100 || page.nextCursor === undefined) throw new Error(`history of ${path}: ${page.items.length} items`);
  };
  const rows: Array<{ variant: string; versions: number; latency: Latency }> = [];
  rows.push({ variant: 'strata in-process', versions: VERSIONS, latency: await latencies(QUERIES, () => firstPage(LONG_PATH)) });
  rows.push({ variant: 'strata in-process', versions: SHORT_VERSIONS, latency: await latencies(QUERIES, () => firstPage(SHORT_PATH)) });
  await bench.local.close();

  if (boot !== null) {
    const server = await startServerChild(home);
    const client = new HttpClient(server.url, boot.apiKey, 1);
    const get = (path: string) => () => client.json(`GET`, `/v1/projects/${projectId}/history?path=${encodeURIComponent(path)}&limit=100`);
    try {
      rows.push({ variant: 'strata HTTP', versions: VERSIONS, latency: await latencies(QUERIES, get(LONG_PATH)) });
      rows.push({ variant: 'strata HTTP', versions: SHORT_VERSIONS, latency: await latencies(QUERIES, get(SHORT_PATH)) });
    } finally {
      client.close();
      await server.close();
    }
  }
  removeDir(home);
  rows.push({ variant: 'git log -n 100 (process start included)', versions: SHORT_VERSIONS, latency: await gitPeer() });

  printTable(
    'First page (100 items) of one path\'s history, ms',
    ['variant', 'versions of the path', 'queries', 'p50 ms', 'p95 ms', 'min', 'max'],
    rows.map((r) => [r.variant, r.versions, r.latency.n, r.latency.p50, r.latency.p95, r.latency.min, r.latency.max]),
  );
  if (httpReason !== null) console.log(`\nstrata HTTP: not measured: ${httpReason}`);
  const gitP50 = rows.at(-1)!.latency.p50;
  console.log(`\ngit log on ${SHORT_VERSIONS} commits p50 ${gitP50} ms; Strata at equal length is ${(gitP50 / rows[1]!.latency.p50).toFixed(1)}× faster in process`);
  const targets = rows.filter((r) => r.variant.startsWith('strata') && r.versions === VERSIONS).map((r) => target(`${r.variant}: p50 ms (${VERSIONS} versions)`, r.latency.p50, '<=', 10, ' ms'));
  printTargets(targets);
  const file = writeResult('history-100k', {
    benchmark: 'history-100k',
    machine,
    params: { versions: VERSIONS, shortVersions: SHORT_VERSIONS, queries: QUERIES, warmup: WARMUP, gitQueries: GIT_QUERIES, writesInFlight: IN_FLIGHT },
    setup: { writeSeconds: round3(writeSeconds), versionsPerSecond: Math.round(VERSIONS / writeSeconds) },
    rows,
    targets,
    ...(httpReason === null ? {} : { httpNotMeasured: httpReason }),
    notes: 'git peer: 2,000 commits of one path built with git fast-import (100,000 takes too long to build per run)',
  });
  console.log(`\nresult: ${file}`);
}

await main();
