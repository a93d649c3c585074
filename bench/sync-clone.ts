// Issue 38's clone and first-sync rows, real processes on loopback, side by side in one run:
//   clone   `strata clone` of N small files (1–20 KiB, default 5,000) + one big file (default 500 MiB)
//           until `strata sync wait` exits 0, against `rsync -a` pulling the same tree from an rsync
//           daemon (target ≥ 0.5×)
//   first   first sync of the same tree (`strata init --server` + `sync wait`) against
//           `rsync -a --fsync` pushing it to an rsync daemon (target ≥ 1.0×)
// The server's requests are counted by route (its Prometheus metrics) for each phase: a clone once
// cost a `fs/read` request per file. The big file is also timed on its own (a tree of it alone), so
// the small files' figure is visible apart from it on this 2-core machine.
//
// The daemon's user and system CPU of the clone alone are printed apart: on an ext4 without a journal
// (this machine's), each file created in a block group where many were deleted within the last
// minute or so costs ext4 a scan of them (recently_deleted() in inode allocation). Measured: 5,000
// files made where 5,000 had just been removed, 2.3-3.3 s of system CPU instead of 0.13 s. The
// previous run's trees are removed right before this one's, so the clone's system time swung from
// 1.5 to 4.5 s between runs; a fresh BENCH_TMP per run keeps it steady.
//
//   node dist/bench/sync-clone.js [--files 5000] [--big-mib 500]   (--files 0: the big file alone)
// Result: bench/results/sync-clone.json.

import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CLI_MAIN, freshDir, machineInfo, nodeEnv, nodeFlags, writeResult } from './lib/env.js';
import { timed } from './lib/proc.js';
import { cli, randomFile, sleep, startRsyncDaemon } from './lib/sync-world.js';
import { printTable } from './lib/table.js';
import { startDaemonProc } from './watch-daemon-proc.js';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};

/** 1–20 KiB of random bytes each (distinct contents, nothing to deduplicate), 500 to a directory. */
async function smallTree(dir: string, count: number): Promise<number> {
  let bytes = 0;
  for (let i = 0; i < count; i++) {
    const sub = join(dir, `d${Math.floor(i / 500)}`);
    if (i % 500 === 0) await mkdir(sub, { recursive: true });
    const size = 1024 + ((i * 7919) % (19 * 1024));
    bytes += size;
    await writeFile(join(sub, `f${i}.dat`), randomBytes(size));
  }
  return bytes;
}

interface Serve {
  url: string;
  apiKey: string;
  /** answered requests by `METHOD route`, from the server's metrics */
  requests(): Promise<Map<string, number>>;
  newProject(name: string): string;
  /** the server's user+system CPU seconds so far, and its full collections (counted with BENCH_SERVE_FLAGS=--trace-gc) */
  usage(): { cpuSeconds: number; markCompacts: number };
  stop(): Promise<void>;
}

async function serve(root: string): Promise<Serve> {
  const home = join(root, 'server');
  const apiKey = (JSON.parse(cli(['admin', 'bootstrap', '--home', home, '--json'])) as { apiKey: string }).apiKey;
  const metricsPort = 30_000 + Math.floor(Math.random() * 20_000);
  // BENCH_SERVE_FLAGS adds V8 flags to the server alone (--trace-gc: its full collections per phase).
  const extra = (process.env['BENCH_SERVE_FLAGS'] ?? '').split(' ').filter((flag) => flag !== '');
  const child = spawn(process.execPath, [...nodeFlags('serve'), ...extra, CLI_MAIN, 'serve', '--home', home, '--listen', '127.0.0.1:0', '--metrics-listen', `127.0.0.1:${metricsPort}`, '--quiet'], {
    env: nodeEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let markCompacts = 0;
  let partial = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop()!;
    for (const line of lines) if (line.includes('Mark-Compact')) markCompacts++;
  });
  const url = await new Promise<string>((resolve, reject) => {
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/[^\s"]+)[\s"]/.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`server exited ${code}: ${stderr}`)));
  });
  return {
    url,
    apiKey,
    async requests() {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      const counts = new Map<string, number>();
      for (const line of text.split('\n')) {
        const m = /^strata_http_requests_total\{(.*)\} (\d+)/.exec(line);
        if (!m) continue;
        const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
        const key = `${labels['method']} ${labels['route']}`;
        counts.set(key, (counts.get(key) ?? 0) + Number(m[2]));
      }
      return counts;
    },
    usage() {
      const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return { cpuSeconds: (Number(fields[11]) + Number(fields[12])) / 100, markCompacts };
    },
    newProject: (name) => (JSON.parse(cli(['projects', 'create', name, '--json'], { STRATA_SERVER_URL: url, STRATA_API_KEY: apiKey })) as { projectId: string }).projectId,
    stop: async () => {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

function diff(after: Map<string, number>, before: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, n] of after) if (n - (before.get(key) ?? 0) > 0) out[key] = n - (before.get(key) ?? 0);
  return out;
}
const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

const usageSince = (after: { cpuSeconds: number; markCompacts: number }, before: { cpuSeconds: number; markCompacts: number }) => ({
  cpuSeconds: Number((after.cpuSeconds - before.cpuSeconds).toFixed(2)),
  markCompacts: after.markCompacts - before.markCompacts,
});

/** `strata sync wait` as a user runs it; resolves when it exits 0. */
function syncWait(home: string, apiKey: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_MAIN, 'sync', 'wait', '--timeout', '1800', '--home', home], { env: { ...nodeEnv(), STRATA_API_KEY: apiKey }, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr!.on('data', (c: Buffer) => {
      err += c.toString();
    });
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`sync wait exited ${code}: ${err}`))));
  });
}

/** Both phases over one tree; returns seconds and request counts. */
async function phases(root: string, source: string, label: string) {
  const server = await serve(join(root, label));
  const projectId = server.newProject(label);
  execFileSync('sync');
  // first sync: rsync -a --fsync to an rsync daemon, then strata init --server + sync wait
  const rsyncPush = await startRsyncDaemon(root, `rsync-${label}`);
  const rsyncFsync = await rsyncPush.push(source, ['--fsync']);
  rsyncPush.stop();
  execFileSync('sync');
  const homeA = join(root, label, 'home-a');
  const a = await startDaemonProc(homeA, 'info');
  const beforeFirst = await server.requests();
  const serverBeforeFirst = server.usage();
  const firstSeconds = await timed(async () => {
    cli(['init', source, '--server', server.url, '--project', projectId, '--home', homeA], { STRATA_API_KEY: server.apiKey });
    await syncWait(homeA, server.apiKey);
  });
  const firstRequests = diff(await server.requests(), beforeFirst);
  const firstServer = usageSince(server.usage(), serverBeforeFirst);
  // The daemon's CPU seconds (user + system) for the phase: less at the mercy of a loaded machine
  // than its wall time (the daemon did nothing else since it started).
  const firstCpuSeconds = a.cpuSeconds();
  await a.stop();
  execFileSync('sync');
  // clone: rsync -a pulling the tree from an rsync daemon, then strata clone + sync wait
  const rsyncPull = await startRsyncDaemon(root, `rsync-src-${label}`);
  const pullTarget = freshDir(`sync-clone-rsync-${label}`);
  const rsyncSeconds = await timed(() => pullWithRsync(source, pullTarget));
  rsyncPull.stop();
  execFileSync('sync');
  const homeB = join(root, label, 'home-b');
  const dirB = freshDir(`sync-clone-b-${label}`);
  const b = await startDaemonProc(homeB, 'info');
  const cloneStartSplit = cpuSplit(b.child.pid!);
  const beforeClone = await server.requests();
  const serverBeforeClone = server.usage();
  const cloneSeconds = await timed(async () => {
    cli(['clone', server.url, projectId, dirB, '--home', homeB], { STRATA_API_KEY: server.apiKey });
    await syncWait(homeB, server.apiKey);
  });
  const cloneRequests = diff(await server.requests(), beforeClone);
  const cloneServer = usageSince(server.usage(), serverBeforeClone);
  // The clone is what was sent: same bytes at every path.
  const cloneCpuSeconds = b.cpuSeconds();
  const cloneEndSplit = cpuSplit(b.child.pid!);
  // user and system seconds of the clone alone (the daemon's start-up left out)
  const cloneCpuSplit = { user: Number((cloneEndSplit.user - cloneStartSplit.user).toFixed(2)), system: Number((cloneEndSplit.system - cloneStartSplit.system).toFixed(2)) };
  execFileSync('diff', ['-r', '-q', '--exclude=.strata', source, dirB]);
  await b.stop();
  await server.stop();
  return { rsyncFsyncSeconds: rsyncFsync.seconds, firstSeconds, firstRequests, firstCpuSeconds, firstServer, rsyncSeconds, cloneSeconds, cloneRequests, cloneCpuSeconds, cloneCpuSplit, cloneServer };
}

/** A process's user and system CPU seconds so far (/proc/PID/stat). */
function cpuSplit(pid: number): { user: number; system: number } {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 };
}

/** rsync -a from an rsync daemon serving `source` into `target` (the daemon's module is read-only here: same tree). */
async function pullWithRsync(source: string, target: string): Promise<void> {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const conf = join(target, '..', `rsync-pull-${port}.conf`);
  await writeFile(conf, `use chroot = no\n[src]\npath = ${source}\nread only = yes\nuid = root\ngid = root\n`);
  const daemon = spawn('rsync', ['--daemon', '--no-detach', `--config=${conf}`, `--port=${port}`, '--address=127.0.0.1'], { stdio: 'ignore' });
  await sleep(300);
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn('rsync', ['-a', `rsync://127.0.0.1:${port}/src/`, `${target}/`], { stdio: 'ignore' });
      child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`rsync exited ${code}`))));
    });
  } finally {
    daemon.kill('SIGTERM');
  }
}

async function main(): Promise<void> {
  const files = arg('files', 5000);
  const bigMib = arg('big-mib', 500);
  const root = freshDir('sync-clone-bench');
  const source = freshDir('sync-clone-src');
  const bytes = await smallTree(source, files);
  if (bigMib > 0) {
    await mkdir(join(source, 'big'));
    await randomFile(join(source, 'big', 'big.bin'), bigMib);
  }
  const whole = await phases(root, source, 'whole');
  // The big file alone, the same two phases: its share of the times above.
  // With no small files (--files 0) the whole tree is the big file: not timed twice.
  let big = null;
  if (bigMib > 0 && files > 0) {
    const bigOnly = freshDir('sync-clone-src-big');
    await randomFile(join(bigOnly, 'big.bin'), bigMib);
    big = await phases(root, bigOnly, 'big');
  }
  const ratio = (peer: number, strata: number) => `${(peer / strata).toFixed(2)}×`;
  const rows = [
    ['clone + sync wait', whole.cloneSeconds.toFixed(2), `rsync -a (pull) ${whole.rsyncSeconds.toFixed(2)}`, ratio(whole.rsyncSeconds, whole.cloneSeconds), String(total(whole.cloneRequests))],
    ['first sync (init --server + sync wait)', whole.firstSeconds.toFixed(2), `rsync -a --fsync ${whole.rsyncFsyncSeconds.toFixed(2)}`, ratio(whole.rsyncFsyncSeconds, whole.firstSeconds), String(total(whole.firstRequests))],
  ];
  if (big !== null) {
    rows.push(['  the big file alone: clone', big.cloneSeconds.toFixed(2), `rsync -a ${big.rsyncSeconds.toFixed(2)}`, ratio(big.rsyncSeconds, big.cloneSeconds), String(total(big.cloneRequests))]);
    rows.push(['  the big file alone: first sync', big.firstSeconds.toFixed(2), `rsync -a --fsync ${big.rsyncFsyncSeconds.toFixed(2)}`, ratio(big.rsyncFsyncSeconds, big.firstSeconds), String(total(big.firstRequests))]);
  }
  printTable(`${files} files of 1–20 KiB (${Math.round(bytes / 1024 ** 2)} MiB)${bigMib > 0 ? ` + one ${bigMib} MiB file` : ''}, loopback`, ['strata', 'seconds', 'peer seconds', 'speed vs peer', 'server requests'], rows);
  console.log(`daemon CPU seconds (user + system): clone ${whole.cloneCpuSeconds.toFixed(2)}, first sync ${whole.firstCpuSeconds.toFixed(2)}`);
  console.log(`  the clone alone (start-up left out): user ${whole.cloneCpuSplit.user.toFixed(2)}, system ${whole.cloneCpuSplit.system.toFixed(2)}`);
  const gc = (u: { markCompacts: number }) => (process.env['BENCH_SERVE_FLAGS']?.includes('--trace-gc') ? `, ${u.markCompacts} mark-compacts` : '');
  console.log(`server CPU seconds: clone ${whole.cloneServer.cpuSeconds.toFixed(2)}${gc(whole.cloneServer)}, first sync ${whole.firstServer.cpuSeconds.toFixed(2)}${gc(whole.firstServer)}`);
  console.log('clone requests by route:', whole.cloneRequests);
  console.log('first-sync requests by route:', whole.firstRequests);
  writeResult('sync-clone', { machine: machineInfo(), files, bytes, bigMib, whole, big });
}

await main();
