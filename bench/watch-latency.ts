// Benchmark 3 of issue 3: watch mode on a 200,000-file project.
//   - initial scan (import) of the 200,000 files: time, RSS
//   - idle CPU over 10 s (target: near zero)
//   - 1,000 writes/s for 10 s: close-to-durable-version latency (target p50 ≤ 250 ms, p99 ≤ 1 s),
//     from the writer's close to the daemon's "versioned" log line (written after the commit is durable)
//   - RSS during and after the load (target ≤ 300 MB)
//
//   node dist/bench/watch-latency.js [--files 200000] [--rate 1000] [--seconds 10] [--reuse]
// Result: bench/results/watch-latency.json.

import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BENCH_TMP, machineInfo, writeResult } from './lib/env.js';
import { percentile } from './lib/stats.js';
import { initProject, startDaemonProc } from './watch-daemon-proc.js';
import { buildTree } from './watcher-choice.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const mib = (bytes: number) => Math.round(bytes / 1024 ** 2);

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
}

async function main(): Promise<void> {
  const files = arg('files', 200_000);
  const rate = arg('rate', 1_000);
  const seconds = arg('seconds', 10);
  const tree = join(BENCH_TMP, `watch-tree-${files}`);
  buildTree(tree, files);
  const writesDir = join(tree, 'bench-writes');
  rmSync(writesDir, { recursive: true, force: true });
  const home = join(BENCH_TMP, 'watch-latency-home');
  // --reuse: keep the home imported by an earlier run (the daemon starts with a catch-up scan).
  const reuse = process.argv.includes('--reuse') && existsSync(join(home, 'daemon.json'));
  if (!reuse) {
    rmSync(home, { recursive: true, force: true });
    await initProject(home, tree);
  }
  const t0 = Date.now();
  const daemon = await startDaemonProc(home);
  let lastReport = 0;
  await daemon.idle(30 * 60_000, (done, total) => {
    if (Date.now() - lastReport > 10_000) {
      lastReport = Date.now();
      process.stderr.write(`initial scan: ${done}/${total}\n`);
    }
  });
  const initialScanSeconds = (Date.now() - t0) / 1000;
  const afterScan = (await daemon.status()).projects[0]!;
  const imported = reuse ? (afterScan.scan?.total ?? 0) : afterScan.captured;
  const rssAfterScan = daemon.rssBytes();
  process.stderr.write(`initial scan of ${imported} files: ${initialScanSeconds.toFixed(1)} s, RSS ${mib(rssAfterScan)} MiB\n`);

  // Idle: let the post-scan work (WAL checkpoints, GC of the heap) finish, then measure.
  await sleep(5_000);
  const cpuIdle0 = daemon.cpuSeconds();
  await sleep(10_000);
  const idleCpuPercent = ((daemon.cpuSeconds() - cpuIdle0) / 10) * 100;
  const rssIdle = daemon.rssBytes();
  process.stderr.write(`idle: ${idleCpuPercent.toFixed(2)} % CPU, RSS ${mib(rssIdle)} MiB\n`);

  // Load: `rate` writes/s over 2,000 paths in 20 directories (each path rewritten every 2 s).
  const paths = Array.from({ length: 2_000 }, (_, i) => `bench-writes/w${i % 20}/f${i}.txt`);
  for (let d = 0; d < 20; d++) mkdirSync(join(writesDir, `w${d}`), { recursive: true });
  await sleep(500);
  const writes: Array<{ path: string; time: number }> = [];
  const cpuLoad0 = daemon.cpuSeconds();
  let peakRss = 0;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, daemon.rssBytes());
  }, 250);
  const start = Date.now();
  const total = rate * seconds;
  let n = 0;
  while (n < total) {
    const due = Math.floor(((Date.now() - start) / 1000) * rate);
    while (n < Math.min(due, total)) {
      const path = paths[n % paths.length]!;
      writeFileSync(join(tree, path), `write ${n} at ${Date.now()}\n`);
      writes.push({ path, time: Date.now() });
      n++;
    }
    await sleep(1);
  }
  const writeSeconds = (Date.now() - start) / 1000;
  await daemon.idle(120_000);
  clearInterval(sampler);
  const loadCpuPercent = ((daemon.cpuSeconds() - cpuLoad0) / ((Date.now() - start) / 1000)) * 100;

  // Match each write to the first version of its path logged after it.
  const byPath = new Map<string, number[]>();
  for (const v of daemon.versions) {
    if (!v.path.startsWith('bench-writes/')) continue;
    const list = byPath.get(v.path) ?? [];
    list.push(v.time);
    byPath.set(v.path, list);
  }
  const latencies: number[] = [];
  let missed = 0;
  for (const write of writes) {
    const versions = byPath.get(write.path) ?? [];
    const found = versions.find((t) => t >= write.time);
    if (found === undefined) missed++;
    else latencies.push(found - write.time);
  }
  latencies.sort((a, b) => a - b);
  const versionsLogged = [...byPath.values()].reduce((sum, list) => sum + list.length, 0);
  const result = {
    benchmark: 'watch-latency',
    machine: machineInfo(),
    params: { files, rate, seconds, settleMs: 100 },
    initialScan: { kind: reuse ? 'catch-up' : 'initial', files: imported, seconds: Math.round(initialScanSeconds * 10) / 10, filesPerSecond: Math.round(imported / initialScanSeconds), rssMiB: mib(rssAfterScan) },
    idle: { cpuPercent: Math.round(idleCpuPercent * 100) / 100, rssMiB: mib(rssIdle) },
    load: {
      writes: writes.length,
      achievedWritesPerSecond: Math.round(writes.length / writeSeconds),
      versions: versionsLogged,
      missed,
      latencyMs: { p50: percentile(latencies, 50), p90: percentile(latencies, 90), p99: percentile(latencies, 99), max: latencies.at(-1) },
      cpuPercent: Math.round(loadCpuPercent),
      peakRssMiB: mib(peakRss),
    },
    peakRssMiB: mib(daemon.peakRssBytes()),
    targets: {
      'p50 <= 250 ms': percentile(latencies, 50) <= 250,
      'p99 <= 1000 ms': percentile(latencies, 99) <= 1000,
      'idle CPU near zero (< 1 %)': idleCpuPercent < 1,
      'RSS <= 300 MB': daemon.peakRssBytes() <= 300 * 1024 ** 2,
    },
  };
  await daemon.stop();
  rmSync(writesDir, { recursive: true, force: true });
  const file = writeResult('watch-latency', result);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\nwritten to ${file}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
