// Issue 38's rename row: `mv big big2` of a directory of N files (default 2,000, 99 % of the project)
// on workstation A, until B's directory has all N at the new names and none at the old. Real
// processes on loopback: one `strata serve`, two daemons in watch mode. Reported: the time, what B
// downloaded for it (bytes and objects: a rename carries no content), whether B's incoming delete guard
// held anything or A's own guard tripped, and how many versions B recorded per file.
// Targets: ≤ 5 s, nothing downloaded, no hold. (No peer: rsync has no notion of a rename without
// --fuzzy, and then still re-sends what it cannot match.)
//
//   node dist/bench/sync-rename.js [--files 2000] [--others 20] [--runs 1]
// Result: bench/results/sync-rename.json.

import { readdir, rename, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { freshDir, machineInfo, writeResult } from './lib/env.js';
import { cli, sleep, startServer, syncStatus, untilInSync } from './lib/sync-world.js';
import { printTable } from './lib/table.js';
import { type DaemonProc, startDaemonProc } from './watch-daemon-proc.js';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};

interface SyncFigures {
  downloadedBytes: number;
  downloadedObjects?: number;
  pulled: number;
  pushed?: number;
  held: { deletes: number; files: number } | null;
  state: string;
}

async function figures(daemon: DaemonProc): Promise<SyncFigures> {
  const doc = await syncStatus(daemon);
  return doc.projects[0]!.sync as unknown as SyncFigures;
}

async function guardTripped(daemon: DaemonProc): Promise<boolean> {
  const response = await fetch(`${daemon.url}/v1/daemon/status`, { headers: { authorization: `Bearer ${daemon.apiKey}` } });
  const doc = (await response.json()) as { projects: Array<{ massDeleteGuard: { tripped: boolean } }> };
  return doc.projects[0]!.massDeleteGuard.tripped;
}

async function names(dir: string): Promise<string[] | null> {
  return readdir(dir).catch(() => null);
}

async function run(root: string, files: number, others: number, index: number): Promise<Record<string, unknown>> {
  const base = join(root, `run${index}`);
  const server = await startServer(base);
  const projectId = server.newProject('rename');
  const [dirA, dirB] = [freshDir(`sync-bench-rename-a${index}`), freshDir(`sync-bench-rename-b${index}`)];
  const [homeA, homeB] = [join(base, 'home-a'), join(base, 'home-b')];
  await mkdir(join(dirA, 'big'), { recursive: true });
  // Files of 1–4 KiB with content of their own: a rename that re-downloaded would show in bytes.
  for (let i = 0; i < files; i++) await writeFile(join(dirA, 'big', `f${String(i).padStart(5, '0')}.dat`), `${i} `.repeat(256 + (i % 3) * 256));
  for (let i = 0; i < others; i++) await writeFile(join(dirA, `other${i}.txt`), `other ${i}\n`);
  const a = await startDaemonProc(homeA);
  const b = await startDaemonProc(homeB);
  try {
    cli(['init', dirA, '--server', server.url, '--project', projectId, '--home', homeA], { STRATA_API_KEY: server.apiKey });
    cli(['clone', server.url, projectId, dirB, '--home', homeB], { STRATA_API_KEY: server.apiKey });
    await untilInSync(a, 10 * 60_000);
    await untilInSync(b, 10 * 60_000);
    if ((await names(join(dirB, 'big')))?.length !== files) throw new Error('B does not have the directory before the rename');
    const before = await figures(b);
    const beforeA = await figures(a);
    let pushedAt: number | null = null;
    let pulledAt: number | null = null;

    let held = false;
    let polls = 0;
    const started = Date.now();
    await rename(join(dirA, 'big'), join(dirA, 'big2'));
    let visibleMs: number | null = null;
    const deadline = started + 5 * 60_000;
    while (Date.now() < deadline) {
      const [newNames, oldNames] = [await names(join(dirB, 'big2')), await names(join(dirB, 'big'))];
      if (newNames?.length === files && (oldNames === null || oldNames.length === 0)) {
        visibleMs = Date.now() - started;
        break;
      }
      // Both sync statuses every ~250 ms: a hold is sticky (it waits for `strata sync confirm`); the
      // stages' times say where the time goes (A recorded and pushed, B took it into its history).
      if (polls++ % 5 === 0) {
        const [fa, fb] = [await figures(a), await figures(b)];
        if (fb.held !== null) held = true;
        if (pushedAt === null && (fa.pushed ?? 0) - (beforeA.pushed ?? 0) >= 2 * files) pushedAt = Date.now() - started;
        if (pulledAt === null && fb.pulled - before.pulled >= 2 * files) pulledAt = Date.now() - started;
      }
      await sleep(50);
    }
    await untilInSync(a, 5 * 60_000).catch(() => undefined);
    await untilInSync(b, 5 * 60_000).catch(() => undefined);
    const after = await figures(b);
    held ||= after.held !== null;
    const aGuard = await guardTripped(a);
    // Versions B recorded for one renamed file's new path (history per file: one step at most).
    const localId = (await syncStatus(b)).projects[0]!.projectId;
    const response = await fetch(`${b.url}/v1/projects/${localId}/history?path=big2/f00000.dat`, { headers: { authorization: `Bearer ${b.apiKey}` } });
    const history = (await response.json()) as { items: unknown[] };
    return {
      files: files,
      projectFiles: files + others,
      visibleOnBSeconds: visibleMs === null ? null : visibleMs / 1000,
      /** when A's sync had pushed the renames (both halves of each), and when B had taken them into its history */
      aRecordedSeconds: (() => {
        const renamed = a.versions.filter((v) => v.path.startsWith('big2/'));
        return renamed.length === 0 ? null : (Math.max(...renamed.map((v) => v.time)) - started) / 1000;
      })(),
      aFirstRecordedSeconds: (() => {
        const renamed = a.versions.filter((v) => v.path.startsWith('big2/'));
        return renamed.length === 0 ? null : (Math.min(...renamed.map((v) => v.time)) - started) / 1000;
      })(),
      aPushedSeconds: pushedAt === null ? null : pushedAt / 1000,
      bPulledSeconds: pulledAt === null ? null : pulledAt / 1000,
      downloadedBytes: after.downloadedBytes - before.downloadedBytes,
      downloadedObjects: (after.downloadedObjects ?? 0) - (before.downloadedObjects ?? 0),
      heldOnB: held,
      aGuardTripped: aGuard,
      newPathVersionsOnB: history.items.length,
      bStateAfter: after.state,
    };
  } finally {
    await a.stop();
    await b.stop();
    await server.stop();
  }
}

async function main(): Promise<void> {
  const files = arg('files', 2000);
  const others = arg('others', 20);
  const runs = arg('runs', 1);
  const root = freshDir('sync-bench-rename');
  const results: Array<Record<string, unknown>> = [];
  for (let i = 0; i < runs; i++) results.push(await run(root, files, others, i));
  printTable(`rename of a ${files}-file directory on A, visible on B (target ≤ 5 s, 0 bytes, no hold)`, ['run', 'seconds', 'bytes down', 'objects down', 'held on B', "A's guard", 'versions/file on B'], results.map((r, i) => [
    i + 1,
    r['visibleOnBSeconds'] === null ? 'not in 5 min' : (r['visibleOnBSeconds'] as number).toFixed(2),
    r['downloadedBytes'] as number,
    r['downloadedObjects'] as number,
    r['heldOnB'] ? 'yes' : 'no',
    r['aGuardTripped'] ? 'tripped' : 'ok',
    r['newPathVersionsOnB'] as number,
  ]));
  const path = writeResult('sync-rename', { machine: machineInfo(), files, others, runs: results });
  console.log(`result: ${path}`);
}

await main();
