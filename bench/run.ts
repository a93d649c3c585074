// Runs the benchmarks one after another, each in its own process (so one's memory and threads do not
// disturb the next), then removes the large scratch files. `npm run bench` and bench/run-all.sh call
// this. Usage: node dist/bench/run.js [name...]   (default: all; BENCH_KEEP=1 keeps the ingest sources)
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { BENCH_TMP, REPO_ROOT, removeDir } from './lib/env.js';

export const BENCHMARKS = [
  'ingest-large',
  'small-writes',
  'snapshot-100k',
  'history-100k',
  'watch-latency',
  'watch-vs-gitwatch',
  'mount-dd',
  'mount-untar',
  'git-export',
  'chunk-throughput',
  'dataset-edits',
  'git-export-project',
  'git-push',
  'server-storage',
  'ui',
  'completion',
] as const;

function runOne(name: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(REPO_ROOT, 'dist', 'bench', `${name}.js`)], { stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

async function main(): Promise<void> {
  const requested = process.argv.slice(2);
  const unknown = requested.filter((name) => !(BENCHMARKS as readonly string[]).includes(name));
  if (unknown.length > 0) throw new TypeError(`unknown benchmark(s) ${unknown.join(', ')}; known: ${BENCHMARKS.join(', ')}`);
  const names = requested.length > 0 ? requested : [...BENCHMARKS];
  const failed: string[] = [];
  const started = Date.now();
  for (const name of names) {
    console.log(`\n=== ${name} ===`);
    const t0 = Date.now();
    const code = await runOne(name);
    console.log(`=== ${name}: ${code === 0 ? 'done' : `FAILED (exit ${code})`} in ${((Date.now() - t0) / 1000).toFixed(0)} s ===`);
    if (code !== 0) failed.push(name);
  }
  // Only what these benchmarks leave behind on purpose (the 1 GB of ingest sources; each benchmark
  // empties its own trash): BENCH_TMP may hold other people's scratch data.
  if (process.env['BENCH_KEEP'] !== '1') removeDir(join(BENCH_TMP, 'ingest-src'));
  console.log(`\nall benchmarks: ${((Date.now() - started) / 1000).toFixed(0)} s; results in bench/results/`);
  if (failed.length > 0) {
    console.log(`failed: ${failed.join(', ')}`);
    process.exitCode = 1;
  }
}

await main();
