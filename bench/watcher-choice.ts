// Which file watcher watch mode uses (issue 3: "choose the watcher on evidence, measured on a
// 200,000-file tree"): chokidar 6 vs @parcel/watcher 2 vs one plain fs.watch per directory (what we
// ship, daemon/watch/tree-watcher.ts), each in its own process on the same tree.
// Measured per watcher: time until the watch is ready, RSS once ready, CPU spent getting there, and
// the latency from a file's close to the watcher's event (200 writes, 10 ms apart).
//
//   node dist/bench/watcher-choice.js [--files 200000]
//
// Result: bench/results/watcher-choice.json.

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BENCH_TMP, machineInfo, writeResult } from './lib/env.js';
import { percentile } from './lib/stats.js';

type Variant = 'parcel' | 'chokidar' | 'fs.watch per dir';
const FILES_PER_DIR = 100;
const PROBES = 200;

interface ChildReport {
  variant: Variant;
  readyMs: number;
  rssMiB: number;
  cpuMs: number;
  latencyMs: { p50: number; p99: number; max: number; missed: number };
}

const nowMs = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A tree of `files` small files, FILES_PER_DIR per directory, two levels deep; reused when present. */
export function buildTree(root: string, files: number): void {
  const marker = join(root, `.complete-${files}`);
  if (existsSync(marker)) return;
  const dirs = Math.ceil(files / FILES_PER_DIR);
  for (let d = 0; d < dirs; d++) {
    const dir = join(root, `d${Math.floor(d / 50)}`, `s${d}`);
    mkdirSync(dir, { recursive: true });
    for (let f = 0; f < FILES_PER_DIR && d * FILES_PER_DIR + f < files; f++) writeFileSync(join(dir, `f${f}.txt`), `file ${d}/${f}\n`);
  }
  writeFileSync(marker, '');
}

async function child(variant: Variant, root: string, files: number): Promise<ChildReport> {
  const seen = new Map<string, number>();
  const onPath = (path: string) => {
    if (!seen.has(path)) seen.set(path, nowMs());
  };
  const cpu0 = process.cpuUsage();
  const start = nowMs();
  let stop: () => Promise<void>;
  if (variant === 'parcel') {
    const watcher = await import('@parcel/watcher');
    const subscription = await watcher.subscribe(root, (error, events) => {
      if (error) throw error;
      for (const event of events) onPath(event.path);
    });
    stop = () => subscription.unsubscribe();
  } else if (variant === 'fs.watch per dir') {
    // what watch mode ships: daemon/watch/tree-watcher.ts
    const { TreeWatcher } = await import('../daemon/watch/tree-watcher.js');
    const watcher = new TreeWatcher({ root, ignoreDir: () => false, onPath: (path) => onPath(join(root, path)), onError: (error) => {
      throw error;
    } });
    await watcher.addTree('');
    stop = async () => watcher.close();
  } else {
    const { watch } = await import('chokidar');
    const watcher = watch(root, { ignoreInitial: true });
    watcher.on('add', onPath).on('change', onPath);
    await new Promise<void>((resolve, reject) => watcher.on('ready', resolve).on('error', reject));
    stop = () => watcher.close();
  }
  const readyMs = nowMs() - start;
  const cpu = process.cpuUsage(cpu0);
  await sleep(500);
  const rssMiB = process.memoryUsage().rss / 1024 ** 2;

  const written = new Map<string, number>();
  const dirs = Math.ceil(files / FILES_PER_DIR);
  for (let i = 0; i < PROBES; i++) {
    const d = (i * 7919) % dirs;
    const path = join(root, `d${Math.floor(d / 50)}`, `s${d}`, `probe-${process.pid}-${i}.txt`);
    writeFileSync(path, `probe ${i}\n`);
    written.set(path, nowMs());
    await sleep(10);
  }
  await sleep(1500);
  await stop();
  const latencies = [...written].filter(([path]) => seen.has(path)).map(([path, at]) => seen.get(path)! - at).sort((a, b) => a - b);
  return {
    variant,
    readyMs: Math.round(readyMs),
    rssMiB: Math.round(rssMiB),
    cpuMs: Math.round((cpu.user + cpu.system) / 1000),
    latencyMs: {
      p50: round(percentile(latencies, 50)),
      p99: round(percentile(latencies, 99)),
      max: round(latencies.at(-1) ?? Number.NaN),
      missed: PROBES - latencies.length,
    },
  };
}

const round = (n: number) => Math.round(n * 10) / 10;

function runChild(variant: Variant, root: string, files: number): Promise<ChildReport> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [fileURLToPath(import.meta.url), '--child', variant, root, String(files)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    proc.on('error', reject);
    proc.on('close', (code) => (code === 0 ? resolve(JSON.parse(out) as ChildReport) : reject(new Error(`${variant} child exited ${code}`))));
  });
}

async function main(args: string[]): Promise<void> {
  if (args[0] === '--child') {
    process.stdout.write(JSON.stringify(await child(args[1] as Variant, args[2]!, Number(args[3]))));
    return;
  }
  const files = args[0] === '--files' ? Number(args[1]) : 200_000;
  const root = join(BENCH_TMP, `watch-tree-${files}`);
  const t0 = Date.now();
  buildTree(root, files);
  process.stderr.write(`tree of ${files} files ready in ${Date.now() - t0} ms\n`);
  const reports: ChildReport[] = [];
  for (const variant of ['fs.watch per dir', 'parcel', 'chokidar'] as const) {
    const report = await runChild(variant, root, files);
    process.stderr.write(`${JSON.stringify(report)}\n`);
    reports.push(report);
  }
  const file = writeResult('watcher-choice', { benchmark: 'watcher-choice', machine: machineInfo(), params: { files, probes: PROBES }, reports });
  process.stdout.write(`${JSON.stringify(reports, null, 2)}\nwritten to ${file}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main(process.argv.slice(2));
