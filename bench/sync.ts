// Benchmarks of issue 14 (sync), real processes on loopback, side by side in one run:
//   first   first sync of N small files (default 20,000) and a 2 GiB dataset to a server: `strata init
//           --server` until in sync (local import included), against `rsync -a` to an rsync daemon;
//           then a 1 MiB overwrite in the middle of the dataset, re-synced by each: bytes through
//           loopback (both directions, headers included) and the shards Strata sent
//   latency a change on A visible on B: 100 writes/s for 30 s on A, each file seen complete in B's
//           directory (targets p50 ≤ 1 s, p99 ≤ 3 s; Syncthing's watcher alone waits 10 s by default)
//   drain   100,000 versions queued on A (imported before the link), pushed: versions/s (target
//           ≥ 2,000) and the daemon's RSS throughout (target ≤ 300 MB)
//
//   node dist/bench/sync.js [--only first,latency,drain] [--files 20000] [--dataset-mib 2048] [--drain 100000] [--rate 100] [--seconds 30]
// Result: bench/results/sync.json.

import { execFileSync } from 'node:child_process';
import { watch } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freshDir, machineInfo, writeResult } from './lib/env.js';
import { anonRss, cpuSecondsOf, currentRss, timed } from './lib/proc.js';
import { percentile } from './lib/stats.js';
import {
  cli,
  loopbackBytes,
  overwriteAt,
  type RsyncDaemon,
  randomFile,
  sleep,
  smallFiles,
  startRsyncDaemon,
  startServer,
  syncStatus,
  untilInSync,
} from './lib/sync-world.js';
import { printTable } from './lib/table.js';
import { type DaemonProc, startDaemonProc } from './watch-daemon-proc.js';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};
const only = (() => {
  const i = process.argv.indexOf('--only');
  return i === -1 ? ['first', 'latency', 'drain'] : process.argv[i + 1]!.split(',');
})();

async function firstSync(root: string, files: number, datasetMib: number): Promise<object> {
  const server = await startServer(join(root, 'first'));
  const source = freshDir('sync-bench-first-src');
  const bytes = await smallFiles(source, files);
  const dataset = join(source, 'data', 'big.bin');
  if (datasetMib > 0) {
    await mkdir(join(source, 'data'));
    await randomFile(dataset, datasetMib); // over the 64 MiB threshold: a dataset
  }
  execFileSync('sync');
  const rsync = await startRsyncDaemon(root);
  const rsyncFirst = await rsync.push(source);
  // rsync's receiver leaves its copy in the page cache; written back, it is not Strata's disk time.
  execFileSync('sync');
  // Context: rsync made to flush every file it writes, as Strata does before it acknowledges a version.
  const rsyncDurable = await startRsyncDaemon(root, 'rsync-fsync');
  const rsyncFsync = await rsyncDurable.push(source, ['--fsync']);
  rsyncDurable.stop();
  execFileSync('sync');
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
  const resync = datasetMib > 0 ? await resyncAfterOverwrite(daemon, rsync, source, dataset, datasetMib) : null;
  await daemon.stop();
  rsync.stop();
  // The same again in two steps: the local import (Strata's own history of the directory, which rsync
  // does not keep), then the link and the push alone.
  const home2 = join(root, 'first', 'home-b');
  cli(['init', source, '--home', home2]);
  const importSeconds = await timed(async () => {
    const importer = await startDaemonProc(home2);
    await importer.idle(30 * 60_000);
    await importer.stop();
  });
  // A server of its own: the first one's store has every shard already (stored once however many
  // projects hold them), and a push to it wrote nothing to disk (7.9 s where a fresh server takes 16).
  await server.stop();
  const server2 = await startServer(join(root, 'first-push'));
  const projectId2 = server2.newProject('first-push');
  cli(['init', source, '--server', server2.url, '--project', projectId2, '--home', home2], { STRATA_API_KEY: server2.apiKey });
  execFileSync('sync');
  const pusher = await startDaemonProc(home2);
  const cpuBefore = { daemon: pusher.cpuSeconds(), server: cpuSecondsOf(server2.child.pid!) ?? 0 };
  const pushSeconds = await timed(() => untilInSync(pusher, 30 * 60_000));
  const pushCpu = { daemonSeconds: pusher.cpuSeconds() - cpuBefore.daemon, serverSeconds: (cpuSecondsOf(server2.child.pid!) ?? 0) - cpuBefore.server };
  await pusher.stop();
  await server2.stop();
  const rsyncSeconds = rsyncFirst.seconds;
  const result = {
    files,
    bytes,
    datasetMiB: datasetMib,
    rsyncSeconds,
    rsyncFsyncSeconds: rsyncFsync.seconds,
    strataSeconds,
    ratioVsRsync: rsyncSeconds / strataSeconds,
    ratioVsRsyncFsync: rsyncFsync.seconds / strataSeconds,
    importSeconds,
    pushSeconds,
    pushRatioVsRsync: rsyncSeconds / pushSeconds,
    pushCpu,
    daemonPeakRssMiB: Math.round(peak / 1024 ** 2),
    resync,
  };
  const what = `${files} small files (${Math.round(bytes / 1024 ** 2)} MiB)${datasetMib > 0 ? ` + a ${datasetMib} MiB dataset` : ''}`;
  printTable(`first sync of ${what}`, ['tool', 'seconds', 'speed vs rsync'], [
    ['rsync -a → rsync daemon', rsyncSeconds.toFixed(2), '1.00×'],
    ['rsync -a --fsync → rsync daemon (context: durable like Strata)', rsyncFsync.seconds.toFixed(2), `${(rsyncSeconds / rsyncFsync.seconds).toFixed(2)}×`],
    ['strata init --server … until in sync (import included)', strataSeconds.toFixed(2), `${result.ratioVsRsync.toFixed(2)}×`],
    ['  of which: local import (strata init, daemon idle)', importSeconds.toFixed(2), ''],
    ['  of which: push of the imported versions (link → in sync)', pushSeconds.toFixed(2), `${result.pushRatioVsRsync.toFixed(2)}×`],
  ]);
  console.log(`push CPU: daemon ${pushCpu.daemonSeconds.toFixed(2)} s, server ${pushCpu.serverSeconds.toFixed(2)} s; strata vs rsync --fsync: ${result.ratioVsRsyncFsync.toFixed(2)}×`);
  if (resync !== null) {
    printTable(`re-sync after a 1 MiB overwrite in the middle of the ${datasetMib} MiB dataset (bytes through loopback, both directions)`, ['tool', 'seconds', 'loopback bytes', 'content sent', 'new shards'], [
      ['rsync -a → rsync daemon', resync.rsyncSeconds.toFixed(2), resync.rsyncLoopbackBytes, `${resync.rsyncSentBytes} (rsync's "bytes sent")`, '-'],
      ['strata (watch → pushed, in sync)', resync.strataSeconds.toFixed(2), resync.strataLoopbackBytes, resync.strataUploadedBytes, `${resync.newShards} + manifest`],
    ]);
  }
  return result;
}

/**
 * A 1 MiB overwrite in the middle of the dataset, in place: Strata's daemon (watching) captures and
 * pushes it; then rsync sends the same change. Each is measured alone (the other idle) by the bytes
 * that crossed loopback, and by what the tool itself says it sent.
 */
async function resyncAfterOverwrite(daemon: DaemonProc, rsync: RsyncDaemon, source: string, dataset: string, datasetMib: number) {
  const status = async () => (await syncStatus(daemon)).projects[0]!;
  const before = await status();
  const loopback = await loopbackBytes();
  const strataSeconds = await timed(async () => {
    await overwriteAt(dataset, Math.floor(datasetMib / 2) * 1024 ** 2, 1024 ** 2);
    const deadline = Date.now() + 120_000;
    while ((await status()).sync.pushed === before.sync.pushed && Date.now() < deadline) await sleep(250);
    await untilInSync(daemon, 120_000);
  });
  const strataLoopbackBytes = (await loopbackBytes()) - loopback;
  const after = await status();
  const history = (await (
    await fetch(`${daemon.url}/v1/projects/${after.projectId}/fs/dataset/history?path=data/big.bin&limit=2`, { headers: { authorization: `Bearer ${daemon.apiKey}` } })
  ).json()) as { items: Array<{ newShards: number }> };
  execFileSync('sync');
  const rsyncLoopback = await loopbackBytes();
  const again = await rsync.push(source);
  const rsyncLoopbackBytes = (await loopbackBytes()) - rsyncLoopback;
  return {
    rsyncSeconds: again.seconds,
    rsyncLoopbackBytes,
    rsyncSentBytes: again.sentBytes,
    rsyncReceivedBytes: again.receivedBytes,
    strataSeconds,
    strataLoopbackBytes,
    strataUploadedBytes: after.sync.uploadedBytes - before.sync.uploadedBytes,
    newShards: history.items[0]?.newShards ?? null,
    bytesRatioVsRsync: strataLoopbackBytes / rsyncLoopbackBytes,
  };
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
  if (only.includes('first')) results['first'] = await firstSync(root, arg('files', 20_000), arg('dataset-mib', 2048));
  if (only.includes('latency')) results['latency'] = await latency(root, arg('rate', 100), arg('seconds', 30));
  if (only.includes('drain')) results['drain'] = await drain(root, arg('drain', 100_000));
  console.log(`wrote ${writeResult('sync', { machine, ...results })}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
