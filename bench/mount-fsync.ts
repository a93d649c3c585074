// Issue 39 item 7's rows, each side by side with bindfs over the same disk in one run:
//   - fsync: 1,000 × (4 KiB pwrite + fsync) into one file held open. Target ≤ 2× bindfs's time.
//   - sqlite: 6,000 single-row transactions in WAL mode (Python's sqlite3, synchronous=FULL: an
//     fsync of the -wal per commit). Target ≤ 1.5× bindfs's time.
//   - append: `echo line >> log` 1,000 times from one bash (open, append, close each). Target ≤ 5×.
// For Strata it also counts the versions each row left (an fsync asks for durability, not for a
// version: a database's commits are not each a version).
//
//   node dist/bench/mount-fsync.js [--rows fsync,sqlite,append] [--rounds 3] [--fsyncs 1000] [--txns 6000] [--appends 1000]
// Result: bench/results/mount-fsync.json.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { freshDir, machineInfo, removeDir, writeResult } from './lib/env.js';
import { settleDisk, timeRun } from './lib/proc.js';
import { type Summary, summarize, target } from './lib/stats.js';
import { printTable, printTargets, spread } from './lib/table.js';
import { type MountProc, startBindfs, startMount } from './mount-lib.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
}
const ROWS = (() => {
  const i = process.argv.indexOf('--rows');
  return i === -1 ? ['fsync', 'sqlite', 'append'] : process.argv[i + 1]!.split(',');
})();
const ROUNDS = arg('rounds', 3);
const FSYNCS = arg('fsyncs', 1000);
const TXNS = arg('txns', 6000);
const APPENDS = arg('appends', 1000);

const FSYNC_SCRIPT = `
import os, sys
fd = os.open('synced.bin', os.O_WRONLY | os.O_CREAT, 0o644)
block = b'x' * 4096
for i in range(${FSYNCS}):
    os.pwrite(fd, block, i * 4096)
    os.fsync(fd)
os.close(fd)
`;

const SQLITE_SCRIPT = `
import sqlite3
c = sqlite3.connect('lab.db', isolation_level=None)
c.execute('pragma journal_mode=wal')
c.execute('pragma synchronous=full')
c.execute('create table t (i integer primary key, s text)')
for i in range(${TXNS}):
    c.execute('begin')
    c.execute('insert into t values (?, ?)', (i, 'row %d' % i))
    c.execute('commit')
c.close()
`;

const WORKLOADS: Record<string, { what: string; target: number; run(cwd: string): Promise<number>; files: string[] }> = {
  fsync: { what: `${FSYNCS} × 4 KiB write + fsync (ms each)`, target: 2, run: (cwd) => timeRun('python3', ['-c', FSYNC_SCRIPT], { cwd }), files: ['synced.bin'] },
  sqlite: { what: `SQLite WAL, ${TXNS} single-row transactions (s)`, target: 1.5, run: (cwd) => timeRun('python3', ['-c', SQLITE_SCRIPT], { cwd }), files: ['lab.db', 'lab.db-wal', 'lab.db-shm'] },
  append: { what: `echo >> log, ${APPENDS} times (ms each)`, target: 5, run: (cwd) => timeRun('bash', ['-c', `for i in $(seq 1 ${APPENDS}); do echo "line $i" >> log; done`], { cwd }), files: ['log'] },
};

/** Versions the mount recorded for `path` (all kinds). */
async function versionCount(mount: MountProc, path: string): Promise<number> {
  const projects = (await (await fetch(`${mount.url}/v1/projects`, { headers: { authorization: `Bearer ${mount.apiKey}` } })).json()) as { items: Array<{ projectId: string }> };
  const projectId = projects.items[0]!.projectId;
  const response = await fetch(`${mount.url}/v1/projects/${projectId}/history?path=${encodeURIComponent(path)}&limit=1000`, { headers: { authorization: `Bearer ${mount.apiKey}` } });
  return ((await response.json()) as { items: unknown[] }).items.length;
}

interface Row {
  what: string;
  strata: Summary;
  bindfs: Summary;
  /** strata time / bindfs time, per round (the target is an upper bound) */
  ratio: Summary;
  target: number;
  versions: Record<string, number>;
}

async function measure(root: string, name: string): Promise<Row> {
  const workload = WORKLOADS[name]!;
  const strata: number[] = [];
  const bindfs: number[] = [];
  const versions: Record<string, number> = {};
  for (let round = 0; round < ROUNDS; round++) {
    const src = join(root, 'bindfs-src');
    const bindMnt = join(root, 'bindfs-mnt');
    mkdirSync(src, { recursive: true });
    mkdirSync(bindMnt, { recursive: true });
    const bind = await startBindfs(src, bindMnt);
    try {
      await settleDisk();
      bindfs.push(await workload.run(bindMnt));
    } finally {
      await bind.stop();
      removeDir(src);
    }
    const home = join(root, 'strata-home');
    const mnt = join(root, 'strata-mnt');
    mkdirSync(mnt, { recursive: true });
    const mount = await startMount(home, mnt);
    try {
      await settleDisk();
      strata.push(await workload.run(mnt));
      await mount.idle(300_000);
      for (const file of workload.files) versions[file] = await versionCount(mount, file);
    } finally {
      await mount.stop();
      removeDir(home);
    }
    console.log(`round ${round + 1} ${name}: bindfs ${bindfs.at(-1)!.toFixed(3)} s, strata ${strata.at(-1)!.toFixed(3)} s; versions ${JSON.stringify(versions)}`);
  }
  // fsync and append rows: per operation, in ms
  const per = name === 'sqlite' ? 1 : 1000 / (name === 'fsync' ? FSYNCS : APPENDS);
  const scaled = (seconds: number[]) => summarize(seconds.map((s) => s * per));
  return { what: workload.what, strata: scaled(strata), bindfs: scaled(bindfs), ratio: summarize(strata.map((s, i) => s / bindfs[i]!)), target: workload.target, versions };
}

async function main() {
  const root = freshDir('mount-fsync');
  const rows: Row[] = [];
  try {
    for (const name of ROWS) rows.push(await measure(root, name));
  } finally {
    removeDir(root);
  }
  printTable(
    'mount: fsync, SQLite, appends (side by side with bindfs)',
    ['what', 'strata', 'bindfs', 'strata/bindfs', 'versions (strata)'],
    rows.map((row) => [row.what, spread(row.strata), spread(row.bindfs), spread(row.ratio), JSON.stringify(row.versions)]),
  );
  const targets = rows.map((row) => target(`${row.what}: strata/bindfs`, row.ratio.median, '<=', row.target, '×'));
  printTargets(targets);
  writeResult('mount-fsync', { machine: machineInfo(), rounds: ROUNDS, rows, targets });
}

await main();
