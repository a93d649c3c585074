// Benchmark 2 of issue 3: unpack a source tree of 20,000 small files (`tar x`) into the mount vs into
// bindfs (and the plain filesystem for scale), round by round in rotating order, each on a fresh
// journaled ext4 of its own (lib/scratch-fs.ts says why). Target:
// ≥ 1.2× bindfs (issue 15; 0.8× in issue 3). For Strata the clock stops when tar exits; the time until every file is a durable
// version is reported separately, and so are the FUSE operations the mount answered (count and
// average time in our code) and the CPU its threads used per file, which is where a miss would be
// explained.
//
//   node dist/bench/mount-untar.js [--files 20000] [--rounds 3]
// Result: bench/results/mount-untar.json.

import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_TMP, machineInfo, noteWakeupCost, removeDir, selected, writeResult } from './lib/env.js';
import { run, settleDisk, timeRun } from './lib/proc.js';
import { scratchFs } from './lib/scratch-fs.js';
import { pairedSpeedup, round3, summarize, target } from './lib/stats.js';
import { printTable, spread } from './lib/table.js';
import { cpuByThread, cpuDelta, startBindfs, startMount } from './mount-lib.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
}

const FILES = arg('files', 20_000);
const ROUNDS = arg('rounds', Number(process.env['BENCH_ROUNDS'] ?? 3));
const VARIANTS = ['raw', 'bindfs', 'strata'] as const;
type Variant = (typeof VARIANTS)[number];

/** A deterministic tree like a source checkout: 20 packages × 50 modules × 20 files of 100 B–8 KB. */
async function makeTarball(): Promise<string> {
  const dir = join(BENCH_TMP, 'untar-src');
  const tarball = join(dir, `tree-${FILES}.tar`);
  if (existsSync(tarball)) return tarball;
  removeDir(dir);
  let seed = 42;
  const random = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
  const perDir = 20;
  const dirs = Math.ceil(FILES / perDir);
  let made = 0;
  for (let d = 0; d < dirs && made < FILES; d++) {
    const sub = join(dir, 'src', `pkg${String(Math.floor(d / 50)).padStart(2, '0')}`, `mod${String(d % 50).padStart(2, '0')}`);
    mkdirSync(sub, { recursive: true });
    for (let f = 0; f < perDir && made < FILES; f++, made++) {
      const size = 100 + Math.floor(random() * 7900);
      const line = `# module ${d} file ${f}: ${'x'.repeat(60)}\n`;
      writeFileSync(join(sub, `file${String(f).padStart(2, '0')}.py`), line.repeat(Math.ceil(size / line.length)).slice(0, size));
    }
  }
  await run('tar', ['-C', dir, '-cf', tarball, 'src']);
  await run('rm', ['-rf', join(dir, 'src')]);
  return tarball;
}

type Ops = Record<string, { n: number; ms: number; avgUs: number }> | null;

/**
 * One measurement on a filesystem of its own (lib/scratch-fs.ts): the tree, bindfs's backing
 * directory and Strata's home (store, staging files, SQLite) all live on it.
 */
async function once(variant: Variant, tarball: string): Promise<{ seconds: number; durableSeconds?: number; ops?: Ops }> {
  const untar = (into: string) => timeRun('tar', ['-C', into, '-xf', tarball]);
  const fs = await scratchFs('mount-untar', 2048);
  scratchKind = fs.kind;
  try {
    const root = fs.dir;
    await settleDisk();
    if (variant === 'raw') {
      const dir = join(root, 'raw');
      mkdirSync(dir);
      return { seconds: await untar(dir) };
    }
    if (variant === 'bindfs') {
      const src = join(root, 'bindfs-src');
      const mnt = join(root, 'bindfs-mnt');
      mkdirSync(src);
      mkdirSync(mnt);
      const bindfs = await startBindfs(src, mnt);
      try {
        return { seconds: await untar(mnt) };
      } finally {
        await bindfs.stop();
      }
    }
    return await onceStrata(root, untar);
  } finally {
    await fs.release();
  }
}

async function onceStrata(root: string, untar: (into: string) => Promise<number>): Promise<{ seconds: number; durableSeconds: number }> {
  const home = join(root, 'strata-home');
  const mnt = join(root, 'strata-mnt');
  const mount = await startMount(home, mnt);
  try {
    const pid = mount.child.pid!;
    const cpuBefore = cpuByThread(pid);
    const seconds = await untar(mnt);
    // CPU of the mount's threads during the untar, per file: where a slower CPU would hurt first.
    const used = cpuDelta(cpuBefore, cpuByThread(pid));
    const perFile = Object.fromEntries(Object.entries(used).map(([name, ms]) => [name, Math.round((ms * 1000) / FILES)]));
    console.log(`  mount CPU per file during the untar (µs): ${Object.entries(perFile).map(([name, us]) => `${name} ${us}`).join(', ')}`);
    cpuPerFile.push(perFile);
    const t0 = process.hrtime.bigint();
    await mount.idle(600_000);
    return { seconds, durableSeconds: Number(process.hrtime.bigint() - t0) / 1e9 };
  } finally {
    const ops = await mount.stop();
    if (ops) console.log(`  strata FUSE operations: ${Object.entries(ops).map(([op, s]) => `${op} ${s.n} (${s.avgUs} µs)`).join(', ')}`);
    if (mount.requests) console.log(`  kernel requests: ${Object.entries(mount.requests).map(([op, n]) => `${op} ${n}`).join(', ')}`);
    lastOps = ops;
  }
}

let scratchKind = '';
const cpuPerFile: Array<Record<string, number>> = [];
let lastOps: Ops = null;

/** The median of each thread's figure over the rounds. */
function medianPerThread(rounds: Array<Record<string, number>>): Record<string, number> {
  const names = new Set(rounds.flatMap((r) => Object.keys(r)));
  return Object.fromEntries([...names].map((name) => [name, summarize(rounds.map((r) => r[name] ?? 0)).median]));
}

async function main(): Promise<void> {
  const machine = machineInfo();
  noteWakeupCost(machine);
  const tarball = await makeTarball();
  const samples = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
  const durable: number[] = [];
  const active = VARIANTS.filter((v) => selected(v));
  for (let round = 0; round < ROUNDS; round++) {
    const order = active.map((_, i) => active[(i + round) % active.length]!);
    for (const variant of order) {
      const result = await once(variant, tarball);
      samples.get(variant)!.push(result.seconds);
      if (result.durableSeconds !== undefined) durable.push(result.durableSeconds);
      console.log(`round ${round + 1} ${variant}: ${result.seconds.toFixed(2)} s`);
    }
  }

  const rows = active.map((variant) => {
    const s = summarize(samples.get(variant)!);
    return [variant, spread(s), spread(summarize(samples.get(variant)!.map((x) => FILES / x)))];
  });
  printTable(`tar x of ${FILES} small files (median (min–max) of ${ROUNDS})`, ['variant', 'seconds', 'files/s'], rows);
  const vsBindfs = pairedSpeedup(samples.get('strata')!, samples.get('bindfs')!);
  const ofRaw = pairedSpeedup(samples.get('strata')!, samples.get('raw')!);
  const durableSummary = durable.length > 0 ? summarize(durable) : null;
  if (vsBindfs) console.log(`\nstrata vs bindfs: ${spread(vsBindfs)}x (target >= 1.2)`);
  if (ofRaw) console.log(`strata as a fraction of raw: ${spread(ofRaw)}`);
  if (durableSummary) console.log(`tar exit → every file versioned: ${spread(durableSummary)} s`);
  const file = writeResult('mount-untar', {
    machine,
    benchTmp: BENCH_TMP,
    filesystem: scratchKind,
    files: FILES,
    rounds: ROUNDS,
    seconds: Object.fromEntries(active.map((v) => [v, summarize(samples.get(v)!)])),
    secondsPerRound: Object.fromEntries(active.map((v) => [v, samples.get(v)!.map(round3)])),
    strataVsBindfs: vsBindfs,
    strataFractionOfRaw: ofRaw,
    strataTarExitToAllVersionedSeconds: durableSummary,
    strataFuseOperations: lastOps,
    strataCpuPerFileUs: medianPerThread(cpuPerFile),
    targets: vsBindfs ? [target('strata / bindfs (paired median)', vsBindfs.median, '>=', 1.2, 'x')] : [],
  });
  console.log(`\nresult: ${file}`);
}

await main();
