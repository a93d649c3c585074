// Benchmark 1 of issue 3: sequential write of 2 GB through the mount (`dd if=/dev/zero bs=1M
// count=2048 conv=fsync`), side by side with the raw disk and bindfs on the same disk, round by round
// in rotating order. Target: ≥ 1.0× bindfs; the fraction of raw is reported. bindfs runs twice: as
// Debian ships it (the peer) and with `-o big_writes` (128 KiB requests, like our mount), so
// the comparison does not rest on bindfs's default 4 KiB writes alone.
//
// For Strata the clock stops when dd exits (its fsync made the bytes durable in the staging file); the
// time until the version is recorded (hash finalised, file renamed into the store, metadata committed)
// is reported separately.
//
//   node dist/bench/mount-dd.js [--mb 2048] [--rounds 3]
// Result: bench/results/mount-dd.json.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_TMP, freshDir, machineInfo, noteWakeupCost, removeDir, selected, writeResult } from './lib/env.js';
import { run, settleDisk, timeRun } from './lib/proc.js';
import { pairedSpeedup, round3, summarize, target } from './lib/stats.js';
import { printTable, spread } from './lib/table.js';
import { startBindfs, startMount } from './mount-lib.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
}

const MB = arg('mb', 2048);
const ROUNDS = arg('rounds', Number(process.env['BENCH_ROUNDS'] ?? 3));
const VARIANTS = ['raw', 'bindfs', 'bindfs-big_writes', 'strata'] as const;
type Variant = (typeof VARIANTS)[number];

const dd = (file: string) => timeRun('dd', ['if=/dev/zero', `of=${file}`, 'bs=1M', `count=${MB}`, 'conv=fsync', 'status=none']);

async function once(variant: Variant, root: string): Promise<{ seconds: number; durableSeconds?: number }> {
  if (variant === 'raw') {
    const dir = join(root, 'raw');
    mkdirSync(dir, { recursive: true });
    const seconds = await dd(join(dir, 'f'));
    removeDir(dir);
    return { seconds };
  }
  if (variant === 'bindfs' || variant === 'bindfs-big_writes') {
    const src = join(root, `${variant}-src`);
    const mnt = join(root, `${variant}-mnt`);
    mkdirSync(src, { recursive: true });
    mkdirSync(mnt, { recursive: true });
    const fs = await startBindfs(src, mnt, variant === 'bindfs' ? [] : ['big_writes']);
    try {
      return { seconds: await dd(join(mnt, 'f')) };
    } finally {
      await fs.stop();
      removeDir(src);
    }
  }
  const home = join(root, 'strata-home');
  const mnt = join(root, 'strata-mnt');
  removeDir(home);
  const mount = await startMount(home, mnt);
  try {
    const seconds = await dd(join(mnt, 'f'));
    const t0 = process.hrtime.bigint();
    await mount.idle(300_000);
    const durableSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
    return { seconds, durableSeconds };
  } finally {
    await mount.stop();
    removeDir(home);
  }
}

async function main(): Promise<void> {
  const machine = machineInfo();
  noteWakeupCost(machine);
  const root = freshDir('mount-dd');
  const samples = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
  const durable: number[] = [];
  const active = VARIANTS.filter((v) => selected(v));
  for (let round = 0; round < ROUNDS; round++) {
    // Rotate the order so no variant always runs first (or right after the raw disk's writeback).
    const order = active.map((_, i) => active[(i + round) % active.length]!);
    for (const variant of order) {
      await settleDisk();
      const result = await once(variant, root);
      samples.get(variant)!.push(result.seconds);
      if (result.durableSeconds !== undefined) durable.push(result.durableSeconds);
      console.log(`round ${round + 1} ${variant}: ${((MB * 1.048576) / result.seconds).toFixed(0)} MB/s`);
    }
  }
  await run('rm', ['-rf', root]);

  const mbps = (seconds: number) => (MB * 1.048576) / seconds;
  const rows: Array<Array<string | number>> = [];
  const summaries: Record<string, unknown> = {};
  for (const variant of active) {
    const s = summarize(samples.get(variant)!.map(mbps));
    summaries[variant] = s;
    rows.push([variant, spread(s)]);
  }
  printTable(`Sequential write, ${MB} MiB, dd bs=1M conv=fsync (MB/s, median (min–max) of ${ROUNDS})`, ['variant', 'MB/s'], rows);
  const strata = samples.get('strata')!;
  const vsBindfs = pairedSpeedup(strata, samples.get('bindfs')!);
  const vsBigWrites = pairedSpeedup(strata, samples.get('bindfs-big_writes')!);
  const ofRaw = pairedSpeedup(strata, samples.get('raw')!);
  const durableSummary = durable.length > 0 ? summarize(durable) : null;
  if (vsBindfs) console.log(`\nstrata vs bindfs: ${spread(vsBindfs)}x (target >= 1.0)`);
  if (vsBigWrites) console.log(`strata vs bindfs -o big_writes: ${spread(vsBigWrites)}x`);
  if (ofRaw) console.log(`strata as a fraction of raw: ${spread(ofRaw)}`);
  if (durableSummary) console.log(`dd exit → version recorded: ${spread(durableSummary)} s`);
  const file = writeResult('mount-dd', {
    machine,
    benchTmp: BENCH_TMP,
    mb: MB,
    rounds: ROUNDS,
    mbPerSecond: summaries,
    secondsPerRound: Object.fromEntries(active.map((v) => [v, samples.get(v)!.map(round3)])),
    strataVsBindfs: vsBindfs,
    strataVsBindfsBigWrites: vsBigWrites,
    strataFractionOfRaw: ofRaw,
    strataDdExitToVersionSeconds: durableSummary,
    targets: vsBindfs ? [target('strata / bindfs (paired median)', vsBindfs.median, '>=', 1.0, 'x')] : [],
  });
  console.log(`\nresult: ${file}`);
}

await main();
