// Benchmarks of issue 14 (sync), real processes on loopback, side by side in one run:
//   first   first sync of N small files (default 20,000) to a server: `strata init --server` until
//           `strata sync wait` returns (local import included), against `rsync -a` to an rsync daemon
//   latency a change on A visible on B: 100 writes/s for 30 s on A, each file seen complete in B's
//           directory (targets p50 ≤ 1 s, p99 ≤ 3 s; Syncthing's watcher alone waits 10 s by default)
//   drain   100,000 versions queued on A (imported before the link), pushed: versions/s (target
//           ≥ 2,000) and the daemon's RSS throughout (target ≤ 300 MB)
// The 2 GB dataset rows of the table are not measured: datasets do not sync yet (README).
//
//   node dist/bench/sync.js [--only first,latency,drain] [--files 20000] [--drain 100000] [--rate 100] [--seconds 30]
// Result: bench/results/sync.json.

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { watch } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CLI_MAIN, freshDir, machineInfo, nodeEnv, writeResult } from './lib/env.js';
import { anonRss, currentRss, timed } from './lib/proc.js';
import { percentile } from './lib/stats.js';
import { printTable } from './lib/table.js';
import { type DaemonProc, startDaemonProc } from './watch-daemon-proc.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};
const only = (() => {
  const i = process.argv.indexOf('--only');
  return i === -1 ? ['first', 'latency', 'drain'] : process.argv[i + 1]!.split(',');
})();

function cli(args: string[], env: NodeJS.ProcessEnv = {}): string {
  return execFileSync(process.execPath, [CLI_MAIN, ...args], { env: { ...nodeEnv(), ...env }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

interface Server {
  url: string;
  apiKey: string;
  child: ChildProcess;
  newProject(name: string): string;
  stop(): Promise<void>;
}

async function startServer(root: string): Promise<Server> {
  const home = join(root, 'server');
  const apiKey = (JSON.parse(cli(['admin', 'bootstrap', '--home', home, '--json'])) as { apiKey: string }).apiKey;
  const child = spawn(process.execPath, ['--max-semi-space-size=1', CLI_MAIN, 'serve', '--home', home, '--listen', '127.0.0.1:0', '--quiet'], {
    env: nodeEnv(),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`server exited ${code}: ${stderr}`)));
  });
  return {
    url,
    apiKey,
    child,
    newProject: (name) => (JSON.parse(cli(['projects', 'create', name, '--json'], { STRATA_SERVER_URL: url, STRATA_API_KEY: apiKey })) as { projectId: string }).projectId,
    stop: async () => {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

interface SyncDoc {
  projects: Array<{ sync: { inSync: boolean; queue: { versions: number }; pushed: number; state: string } }>;
}

async function syncStatus(daemon: DaemonProc): Promise<SyncDoc> {
  const response = await fetch(`${daemon.url}/v1/daemon/sync`, { headers: { authorization: `Bearer ${daemon.apiKey}` } });
  return (await response.json()) as SyncDoc;
}

async function untilInSync(daemon: DaemonProc, timeoutMs: number, onTick?: () => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let streak = 0;
  while (Date.now() < deadline) {
    onTick?.();
    const doc = await syncStatus(daemon);
    streak = doc.projects.length > 0 && doc.projects.every((p) => p.sync.inSync) ? streak + 1 : 0;
    if (streak >= 2) return;
    await sleep(100);
  }
  throw new Error('not in sync in time');
}

async function smallFiles(dir: string, count: number): Promise<number> {
  let bytes = 0;
  for (let i = 0; i < count; i++) {
    const sub = join(dir, `d${Math.floor(i / 500)}`);
    if (i % 500 === 0) await mkdir(sub, { recursive: true });
    const content = `file ${i}\n${'x'.repeat(200 + ((i * 7919) % 3800))}\n`;
    bytes += content.length;
    await writeFile(join(sub, `f${i}.txt`), content);
  }
  return bytes;
}

async function rsyncDaemonRun(root: string, source: string): Promise<number> {
  const target = freshDir('sync-bench-rsync-target');
  const conf = join(root, 'rsyncd.conf');
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  await writeFile(conf, `pid file = ${join(root, 'rsyncd.pid')}\nuse chroot = no\n[bench]\npath = ${target}\nread only = no\nuid = root\ngid = root\n`);
  const daemon = spawn('rsync', ['--daemon', '--no-detach', `--config=${conf}`, `--port=${port}`, '--address=127.0.0.1'], { stdio: 'ignore' });
  await sleep(500);
  try {
    return await timed(
      () =>
        new Promise<void>((resolve, reject) => {
          const child = spawn('rsync', ['-a', `${source}/`, `rsync://127.0.0.1:${port}/bench/`], { stdio: 'ignore' });
          child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`rsync exited ${code}`))));
        }),
    );
  } finally {
    daemon.kill('SIGTERM');
  }
}

async function firstSync(root: string, files: number): Promise<object> {
  const server = await startServer(join(root, 'first'));
  const source = freshDir('sync-bench-first-src');
  const bytes = await smallFiles(source, files);
  execFileSync('sync');
  const rsyncSeconds = await rsyncDaemonRun(root, source);
  const home = join(root, 'first', 'home-a');
  const daemon = await startDaemonProc(home);
  const projectId = server.newProject('first');
  let peak = 0;
  const strataSeconds = await timed(async () => {
    cli(['init', source, '--server', server.url, '--project', projectId, '--home', home], { STRATA_API_KEY: server.apiKey });
    await untilInSync(daemon, 30 * 60_000, () => {
      peak = Math.max(peak, currentRss(daemon.child.pid!) ?? 0);
    });
  });
  await daemon.stop();
  // The same again in two steps: the local import (Strata's own history of the directory, which rsync
  // does not keep), then the link and the push alone.
  const home2 = join(root, 'first', 'home-b');
  cli(['init', source, '--home', home2]);
  const importSeconds = await timed(async () => {
    const importer = await startDaemonProc(home2);
    await importer.idle(30 * 60_000);
    await importer.stop();
  });
  const projectId2 = server.newProject('first-push');
  cli(['init', source, '--server', server.url, '--project', projectId2, '--home', home2], { STRATA_API_KEY: server.apiKey });
  const pusher = await startDaemonProc(home2);
  const pushSeconds = await timed(() => untilInSync(pusher, 30 * 60_000));
  await pusher.stop();
  await server.stop();
  const result = {
    files,
    bytes,
    rsyncSeconds,
    strataSeconds,
    ratioVsRsync: rsyncSeconds / strataSeconds,
    importSeconds,
    pushSeconds,
    pushRatioVsRsync: rsyncSeconds / pushSeconds,
    daemonPeakRssMiB: Math.round(peak / 1024 ** 2),
  };
  printTable(`first sync of ${files} small files (${Math.round(bytes / 1024 ** 2)} MiB)`, ['tool', 'seconds', 'speed vs rsync'], [
    ['rsync -a → rsync daemon', rsyncSeconds.toFixed(2), '1.00×'],
    ['strata init --server … until in sync (import included)', strataSeconds.toFixed(2), `${result.ratioVsRsync.toFixed(2)}×`],
    ['  of which: local import (strata init, daemon idle)', importSeconds.toFixed(2), ''],
    ['  of which: push of the imported versions (link → in sync)', pushSeconds.toFixed(2), `${result.pushRatioVsRsync.toFixed(2)}×`],
  ]);
  return result;
}

async function latency(root: string, rate: number, seconds: number): Promise<object> {
  const server = await startServer(join(root, 'latency'));
  const projectId = server.newProject('latency');
  const [dirA, dirB] = [freshDir('sync-bench-lat-a'), freshDir('sync-bench-lat-b')];
  const a = await startDaemonProc(join(root, 'latency', 'home-a'));
  const b = await startDaemonProc(join(root, 'latency', 'home-b'));
  await mkdir(join(dirA, 'lat'), { recursive: true });
  cli(['init', dirA, '--server', server.url, '--project', projectId, '--home', join(root, 'latency', 'home-a')], { STRATA_API_KEY: server.apiKey });
  cli(['clone', server.url, projectId, dirB, '--home', join(root, 'latency', 'home-b')], { STRATA_API_KEY: server.apiKey });
  await untilInSync(a, 60_000);
  await untilInSync(b, 60_000);
  await mkdir(join(dirB, 'lat'), { recursive: true });
  // B's directory: each file's arrival (its rename into place), read for the time it was written on A.
  const latencies: number[] = [];
  const seen = new Set<string>();
  const watcher = watch(join(dirB, 'lat'), (_event, name) => {
    if (name === null || seen.has(name)) return;
    void readFile(join(dirB, 'lat', name), 'utf8')
      .then((text) => {
        const written = Number(/^written (\d+)$/m.exec(text)?.[1]);
        if (!Number.isFinite(written) || seen.has(name)) return;
        seen.add(name);
        latencies.push(Date.now() - written);
      })
      .catch(() => {});
  });
  const total = rate * seconds;
  const started = Date.now();
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    if (due > Date.now()) await sleep(due - Date.now());
    await writeFile(join(dirA, 'lat', `w${i}.txt`), `written ${Date.now()}\n`);
  }
  const deadline = Date.now() + 60_000;
  while (seen.size < total && Date.now() < deadline) await sleep(100);
  watcher.close();
  await a.stop();
  await b.stop();
  await server.stop();
  const sorted = [...latencies].sort((x, y) => x - y);
  const result = { writes: total, arrived: seen.size, p50Ms: percentile(sorted, 50), p90Ms: percentile(sorted, 90), p99Ms: percentile(sorted, 99), maxMs: sorted.at(-1) ?? null };
  printTable(`A → B, ${rate} writes/s for ${seconds} s`, ['arrived', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms'], [
    [`${seen.size}/${total}`, result.p50Ms, result.p90Ms, result.p99Ms, result.maxMs ?? '-'],
  ]);
  return result;
}

async function drain(root: string, count: number): Promise<object> {
  const server = await startServer(join(root, 'drain'));
  const projectId = server.newProject('drain');
  const dir = freshDir('sync-bench-drain');
  await smallFiles(dir, count);
  const home = join(root, 'drain', 'home-a');
  // Imported first (not linked): the versions wait in the outbox for the link.
  cli(['init', dir, '--home', home]);
  let daemon = await startDaemonProc(home);
  await daemon.idle(30 * 60_000);
  await daemon.stop();
  cli(['init', dir, '--server', server.url, '--project', projectId, '--home', home], { STRATA_API_KEY: server.apiKey });
  daemon = await startDaemonProc(home);
  console.error(`draining: daemon pid ${daemon.child.pid}`);
  let peak = 0;
  let peakAnon = 0;
  const drainSeconds = await timed(() =>
    untilInSync(daemon, 30 * 60_000, () => {
      peak = Math.max(peak, currentRss(daemon.child.pid!) ?? 0);
      peakAnon = Math.max(peakAnon, anonRss(daemon.child.pid!) ?? 0);
    }),
  );
  const pushed = (await syncStatus(daemon)).projects[0]?.sync.pushed ?? 0;
  await daemon.stop();
  await server.stop();
  const result = {
    versions: count,
    pushed,
    drainSeconds,
    versionsPerSecond: Math.round(count / drainSeconds),
    daemonPeakRssMiB: Math.round(peak / 1024 ** 2),
    daemonPeakAnonRssMiB: Math.round(peakAnon / 1024 ** 2),
  };
  printTable(`drain ${count} queued versions`, ['seconds', 'versions/s', 'daemon peak RSS MiB', 'of which anonymous (peak)'], [
    [drainSeconds.toFixed(1), result.versionsPerSecond, result.daemonPeakRssMiB, result.daemonPeakAnonRssMiB],
  ]);
  return result;
}

async function main(): Promise<void> {
  const root = freshDir('sync-bench');
  const machine = machineInfo();
  const results: Record<string, object> = {};
  if (only.includes('first')) results['first'] = await firstSync(root, arg('files', 20_000));
  if (only.includes('latency')) results['latency'] = await latency(root, arg('rate', 100), arg('seconds', 30));
  if (only.includes('drain')) results['drain'] = await drain(root, arg('drain', 100_000));
  console.log(`wrote ${writeResult('sync', { machine, ...results })}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
