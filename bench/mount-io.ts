// Issue 15's IO rows for the mount, each side by side with its peer in one run:
//   - dd: write 2 GiB (`bs=1M conv=fsync`), then read it back with the page cache dropped; raw disk.
//     Target ≥ 0.7× raw both ways.
//   - append: one byte appended to a 1 GiB file that is already versioned (`printf x >> f` in a
//     shell, which is what is timed); raw disk. Target ≤ 2× raw's time. The time until the new
//     version is recorded (the background copy and the capture) is reported beside it.
//   - git status: in a checkout of 50,000 files (500 directories) unpacked into the mount; bindfs over
//     the same disk (and the raw disk for context). Warm (each is run once before it is timed).
//     Target ≥ 1.0× bindfs.
//
//   node dist/bench/mount-io.js [--rows dd,append,git] [--mb 2048] [--append-mb 1024] [--files 50000] [--rounds 3]
// Result: bench/results/mount-io.json.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_TMP, freshDir, machineInfo, removeDir, writeResult } from './lib/env.js';
import { run, settleDisk, timeRun } from './lib/proc.js';
import { pairedSpeedup, round3, type Summary, summarize, target } from './lib/stats.js';
import { printTable, spread } from './lib/table.js';
import { startBindfs, startMount } from './mount-lib.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
}
const ROWS = (() => {
  const i = process.argv.indexOf('--rows');
  return i === -1 ? ['dd', 'append', 'git'] : process.argv[i + 1]!.split(',');
})();
const MB = arg('mb', 2048);
const APPEND_MB = arg('append-mb', 1024);
const FILES = arg('files', 50_000);
const ROUNDS = arg('rounds', 3);

const dropCaches = async () => {
  await settleDisk();
  writeFileSync('/proc/sys/vm/drop_caches', '3');
};
const sh = (script: string, cwd: string) => timeRun('bash', ['-c', script], { cwd });

interface Row {
  what: string;
  peer: string;
  strata: Summary;
  peerSeconds: Summary;
  /** peer seconds / strata seconds, per round */
  ratio: Summary;
  extra?: Record<string, Summary>;
}

/** What each mount answered (STRATA_MOUNT_OPSTATS), in the order the rows ran: where its time went. */
const mountOps: Array<Record<string, { n: number; ms: number; avgUs: number }>> = [];

/** A Strata mount of a fresh home for `work`, stopped and removed afterwards. */
async function withMount<T>(root: string, work: (mnt: string, mount: Awaited<ReturnType<typeof startMount>>) => Promise<T>): Promise<T> {
  const home = join(root, 'strata-home');
  const mnt = join(root, 'strata-mnt');
  removeDir(home);
  mkdirSync(mnt, { recursive: true });
  const mount = await startMount(home, mnt);
  try {
    return await work(mnt, mount);
  } finally {
    const ops = await mount.stop();
    if (ops !== null) mountOps.push(ops);
    removeDir(home);
  }
}

async function ddRows(root: string): Promise<Row[]> {
  const write = { raw: [] as number[], strata: [] as number[] };
  const read = { raw: [] as number[], strata: [] as number[] };
  const ddWrite = (file: string) => timeRun('dd', ['if=/dev/zero', `of=${file}`, 'bs=1M', `count=${MB}`, 'conv=fsync', 'status=none']);
  const ddRead = (file: string) => timeRun('dd', [`if=${file}`, 'of=/dev/null', 'bs=1M', 'status=none']);
  for (let round = 0; round < ROUNDS; round++) {
    const raw = join(root, 'raw');
    mkdirSync(raw, { recursive: true });
    await dropCaches();
    write.raw.push(await ddWrite(join(raw, 'f')));
    await dropCaches();
    read.raw.push(await ddRead(join(raw, 'f')));
    removeDir(raw);
    await withMount(root, async (mnt, mount) => {
      await dropCaches();
      write.strata.push(await ddWrite(join(mnt, 'f')));
      await mount.idle(600_000);
      await dropCaches();
      read.strata.push(await ddRead(join(mnt, 'f')));
    });
    console.log(`round ${round + 1} dd: write raw ${write.raw.at(-1)!.toFixed(2)} s, strata ${write.strata.at(-1)!.toFixed(2)} s; read raw ${read.raw.at(-1)!.toFixed(2)} s, strata ${read.strata.at(-1)!.toFixed(2)} s`);
  }
  const mbps = (seconds: number[]) => summarize(seconds.map((s) => (MB * 1.048576) / s));
  return [
    { what: `dd write ${MB} MiB conv=fsync (MB/s)`, peer: 'raw', strata: mbps(write.strata), peerSeconds: mbps(write.raw), ratio: pairedSpeedup(write.strata, write.raw)! },
    { what: `dd read ${MB} MiB, cold (MB/s)`, peer: 'raw', strata: mbps(read.strata), peerSeconds: mbps(read.raw), ratio: pairedSpeedup(read.strata, read.raw)! },
  ];
}

async function appendRow(root: string): Promise<Row> {
  const raw: number[] = [];
  const strata: number[] = [];
  const versioned: number[] = [];
  const make = (file: string) => run('dd', ['if=/dev/urandom', `of=${file}`, 'bs=1M', `count=${APPEND_MB}`, 'status=none']);
  const rawDir = join(root, 'append-raw');
  mkdirSync(rawDir, { recursive: true });
  await make(join(rawDir, 'big.bin'));
  await withMount(root, async (mnt, mount) => {
    await run('cp', [join(rawDir, 'big.bin'), join(mnt, 'big.bin')]);
    await mount.idle(600_000);
    // cp's 1 GiB went through the kernel's page cache of the mount's inode, and its writes changed the
    // file's mtime: the next look at the file's attributes drops those pages (AUTO_INVAL_DATA), ~0.2 s,
    // whoever asks. That belongs to the cp, not to the first append timed below.
    await run('stat', [join(mnt, 'big.bin')]);
    for (let round = 0; round < ROUNDS; round++) {
      await settleDisk();
      raw.push(await sh('printf x >> big.bin', rawDir));
      await settleDisk();
      const started = process.hrtime.bigint();
      strata.push(await sh('printf x >> big.bin', mnt));
      await mount.idle(600_000);
      versioned.push(Number(process.hrtime.bigint() - started) / 1e9);
      console.log(`round ${round + 1} append: raw ${(raw.at(-1)! * 1000).toFixed(1)} ms, strata ${(strata.at(-1)! * 1000).toFixed(1)} ms (versioned after ${versioned.at(-1)!.toFixed(2)} s)`);
    }
  });
  removeDir(rawDir);
  const ms = (s: number[]) => summarize(s.map((x) => x * 1000));
  // ratio here: strata time / raw time (the target is an upper bound on it)
  return { what: `append 1 byte to a ${APPEND_MB} MiB file (ms)`, peer: 'raw', strata: ms(strata), peerSeconds: ms(raw), ratio: summarize(strata.map((s, i) => s / raw[i]!)), extra: { versionedSeconds: summarize(versioned) } };
}

async function gitRow(root: string): Promise<Row> {
  // One checkout, tarred; unpacked into each filesystem (tar keeps .git as it is).
  const seed = join(root, 'git-seed');
  mkdirSync(seed, { recursive: true });
  const perDir = Math.ceil(FILES / 500);
  await run('bash', [
    '-c',
    `git init -q . && for d in $(seq 1 500); do mkdir -p src/d$d; for f in $(seq 1 ${perDir}); do echo "line $d $f" > src/d$d/f$f.txt; done; done && git add -A && git -c user.name=b -c user.email=b@b commit -qm seed && tar -cf ../checkout.tar .`,
  ], { cwd: seed });
  removeDir(seed);
  const tarball = join(root, 'checkout.tar');
  const status = (cwd: string) => sh('git status --porcelain > /dev/null', cwd);
  const times = { raw: [] as number[], bindfs: [] as number[], strata: [] as number[] };
  const rawDir = join(root, 'git-raw');
  mkdirSync(rawDir, { recursive: true });
  await run('tar', ['-xf', tarball, '-C', rawDir]);
  const src = join(root, 'git-bindfs-src');
  const bindMnt = join(root, 'git-bindfs-mnt');
  mkdirSync(src, { recursive: true });
  mkdirSync(bindMnt, { recursive: true });
  const bindfs = await startBindfs(src, bindMnt);
  try {
    await run('tar', ['-xf', tarball, '-C', bindMnt]);
    await withMount(root, async (mnt, mount) => {
      await run('tar', ['-xf', tarball, '-C', mnt]);
      await mount.idle(600_000);
      for (const dir of [rawDir, bindMnt, mnt]) await status(dir); // warm: the index refreshed once everywhere
      for (let round = 0; round < ROUNDS; round++) {
        times.raw.push(await status(rawDir));
        times.bindfs.push(await status(bindMnt));
        times.strata.push(await status(mnt));
        console.log(`round ${round + 1} git status: raw ${times.raw.at(-1)!.toFixed(2)} s, bindfs ${times.bindfs.at(-1)!.toFixed(2)} s, strata ${times.strata.at(-1)!.toFixed(2)} s`);
      }
    });
  } finally {
    await bindfs.stop();
    removeDir(src);
    removeDir(rawDir);
  }
  return {
    what: `git status, ${FILES} files (s)`,
    peer: 'bindfs',
    strata: summarize(times.strata),
    peerSeconds: summarize(times.bindfs),
    ratio: pairedSpeedup(times.strata, times.bindfs)!,
    extra: { rawSeconds: summarize(times.raw) },
  };
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('mount-io drops the page cache: run it as root');
  const machine = machineInfo();
  const root = freshDir('mount-io');
  const rows: Row[] = [];
  if (ROWS.includes('dd')) rows.push(...(await ddRows(root)));
  if (ROWS.includes('append')) rows.push(await appendRow(root));
  if (ROWS.includes('git')) rows.push(await gitRow(root));
  await run('rm', ['-rf', root]);
  printTable(
    `Mount IO, median (min–max) of ${ROUNDS}`,
    ['what', 'strata', 'peer', 'peer value', 'ratio'],
    rows.map((row) => [row.what, spread(row.strata), row.peer, spread(row.peerSeconds), spread(row.ratio)]),
  );
  const targets = rows.map((row) =>
    row.what.startsWith('append') ? target(`${row.what}: strata / raw time`, row.ratio.median, '<=', 2, 'x') : target(`${row.what}: strata vs ${row.peer}`, row.ratio.median, '>=', row.what.startsWith('dd') ? 0.7 : 1.0, 'x'),
  );
  for (const t of targets) console.log(`${t.met ? 'met' : 'MISSED'}: ${t.name} = ${t.value} (target ${t.target})`);
  const file = writeResult('mount-io', { machine, benchTmp: BENCH_TMP, rounds: ROUNDS, mb: MB, appendMb: APPEND_MB, files: FILES, mountOps, rows: rows.map((row) => ({ ...row, ratio: { ...row.ratio, samples: row.ratio.samples.map(round3) } })), targets });
  console.log(`\nresult: ${file}`);
}

await main();
