// The long stress runs of issue 39 ("Tests"): fsx (test/stress/fsx.py, one file, every read checked
// against a model) for ≥ 100,000 ops and fsstress (test/stress/fsstress.py, random namespace ops from
// several processes) on a Strata mount and on bindfs over the same disk, side by side. On Strata,
// snapshots and restores land at random moments of both runs (test/stress/disturb.ts), and after
// fsstress the mount's tree must be the engine's (test/stress/tree.ts) and `strata fsck` clean.
//
//   node dist/bench/mount-stress.js [--fsx-ops 100000] [--fsstress-ops 10000] [--procs 4] [--seed 1]
//                                    [--targets bindfs,strata] [--trace FILE]
// Result: bench/results/mount-stress.json (ops, failures, seconds, Strata ÷ bindfs time).

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { VersionRecord } from '../engine/types.js';
import { disturbFsx, disturbTree } from '../test/stress/disturb.js';
import { controlOf, FSSTRESS, FSX, runPython, settledFlag } from '../test/stress/lib.js';
import { engineTree, mountTree, treeDifferences } from '../test/stress/tree.js';
import { CLI_MAIN, freshDir, machineInfo, writeResult } from './lib/env.js';
import { printTable } from './lib/table.js';
import { startBindfs, startMount } from './mount-lib.js';

const option = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1]!;
};
const FSX_OPS = Number(option('fsx-ops', '100000'));
const FSSTRESS_OPS = Number(option('fsstress-ops', '10000'));
const PROCS = Number(option('procs', '4'));
const SEED = Number(option('seed', '1'));
const TARGETS = option('targets', 'bindfs,strata').split(',');

interface Outcome {
  code: number | null;
  seconds: number;
  summary: Record<string, unknown> | null;
  stderr: string;
}

/** A Python exerciser with a timeout (SIGKILL), timed from spawn to exit; its summary is its last line. */
async function exercise(script: string, args: string[], cwd: string, timeoutMs: number): Promise<Outcome> {
  const run = await runPython([script, ...args], cwd, timeoutMs);
  let summary: Record<string, unknown> | null = null;
  try {
    summary = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '') as Record<string, unknown>;
  } catch {
    // no summary: the code and stderr say what happened
  }
  return { code: run.code, seconds: run.seconds, summary, stderr: run.stderr.slice(-4000) };
}

const fsxArgs = (file: string) => ['--file', file, '--seed', String(SEED), '--ops', String(FSX_OPS)];
const TRACE = option('trace', '');
const fsstressArgs = (root: string) => [
  ...['--root', root, '--seed', String(SEED), '--procs', String(PROCS), '--ops', String(FSSTRESS_OPS)],
  ...(TRACE ? ['--trace', TRACE] : []),
];
const HOUR = 3_600_000;

async function onBindfs(): Promise<Record<string, Outcome>> {
  const src = freshDir('mount-stress-bindfs-src');
  const mnt = freshDir('mount-stress-bindfs-mnt');
  const bindfs = await startBindfs(src, mnt);
  try {
    const fsx = await exercise(FSX, fsxArgs('fsx.bin'), mnt, HOUR);
    console.error(`bindfs fsx: exit ${fsx.code} in ${fsx.seconds.toFixed(1)} s`);
    mkdirSync(join(mnt, 'stress'));
    const fsstress = await exercise(FSSTRESS, fsstressArgs(join(mnt, 'stress')), mnt, HOUR);
    console.error(`bindfs fsstress: exit ${fsstress.code} in ${fsstress.seconds.toFixed(1)} s`);
    return { fsx, fsstress };
  } finally {
    await bindfs.stop();
  }
}

async function onStrata(): Promise<Record<string, unknown>> {
  const root = freshDir('mount-stress-strata');
  const home = join(root, 'home');
  const mnt = join(root, 'mnt');
  mkdirSync(mnt);
  const mount = await startMount(home, mnt);
  try {
    const config = JSON.parse(readFileSync(join(home, 'daemon.json'), 'utf8')) as { projects: Array<{ projectId: string }> };
    const control = controlOf(mount.url, mount.apiKey, config.projects[0]!.projectId);

    // fsx with restores under it, and the end handshake (test/stress/fsx.py explains both).
    const [lockFile, doneFile, goFile] = ['lock', 'done', 'go'].map((what) => join(root, `fsx.${what}`)) as [string, string, string];
    const fsxRun = exercise(FSX, [...fsxArgs('fsx.bin'), '--lock-file', lockFile, '--done-file', doneFile, '--go-file', goFile], mnt, HOUR);
    const fsxEnded = settledFlag(fsxRun);
    // A failed snapshot or restore is a result too: fsx still gets its go and ends.
    const fsxDisturbed = await disturbFsx(control, 'fsx.bin', lockFile, SEED, () => fsxEnded() || existsSync(doneFile)).catch((error: Error) => ({ failure: error.message }));
    writeFileSync(goFile, '');
    const fsx = await fsxRun;
    console.error(`strata fsx: exit ${fsx.code} in ${fsx.seconds.toFixed(1)} s, ${JSON.stringify(fsxDisturbed)}`);

    mkdirSync(join(mnt, 'stress'));
    const fsstressRun = exercise(FSSTRESS, fsstressArgs(join(mnt, 'stress')), mnt, HOUR);
    const treeDisturbed = await disturbTree(control, SEED, settledFlag(fsstressRun), true);
    const fsstress = await fsstressRun;
    console.error(`strata fsstress: exit ${fsstress.code} in ${fsstress.seconds.toFixed(1)} s, ${JSON.stringify({ ...treeDisturbed, refused: treeDisturbed.refused.length, failures: treeDisturbed.failures.length })}`);

    let idle = true;
    let stuck: unknown = null;
    await mount.idle(120_000).catch(async () => {
      idle = false;
      // What the mount still waits for (status.projects[].mount.pendingPaths, errors).
      stuck = await control.api<{ projects: Array<{ mount?: { pendingPaths?: string[] }; errors?: unknown[] }> }>('GET', '/v1/daemon/status').then(
        (status) => status.projects.map((p) => ({ pendingPaths: p.mount?.pendingPaths, errors: p.errors })),
        (error: Error) => error.message,
      );
      console.error(`strata: still pending after 120 s: ${JSON.stringify(stuck).slice(0, 2000)}`);
    });
    const differences = treeDifferences(await mountTree(mnt, 'stress', 600_000), await engineTree(control, 'stress/'));
    console.error(`strata tree vs engine: ${differences.length} differences${idle ? '' : ' (the mount never became idle)'}`);
    // What history says about the first few: which write or deletion the mount and the engine disagree on.
    const histories: Record<string, unknown> = {};
    for (const { path } of differences.slice(0, 5)) {
      const history = await control.api<{ items: VersionRecord[] }>('GET', control.project(`/history?path=${encodeURIComponent(path)}&limit=20`)).catch((error: Error) => ({ items: [], error: error.message }));
      histories[path] = history.items.map(({ versionId, kind, size, timestamp, contentHash }) => ({ versionId, kind, size, timestamp, contentHash }));
    }
    await mount.stop();
    const fsckRun = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn(process.execPath, [CLI_MAIN, 'fsck', '--home', home, '--json'], { stdio: ['ignore', 'pipe', 'inherit'] });
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), 600_000);
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout });
      });
    });
    const fsckReport = (() => {
      try {
        return JSON.parse(fsckRun.stdout) as Record<string, unknown>;
      } catch {
        return { unparsed: fsckRun.stdout.slice(0, 2000) };
      }
    })();
    console.error(`strata fsck: exit ${fsckRun.code}, ok ${String(fsckReport['ok'])}`);
    return { fsx, fsxDisturbed, fsstress, treeDisturbed, idle, stuck, differences: differences.slice(0, 100), histories, differenceCount: differences.length, fsck: { code: fsckRun.code, report: fsckReport } };
  } finally {
    await mount.stop().catch(() => null);
  }
}

async function main(): Promise<void> {
  const bindfs = TARGETS.includes('bindfs') ? await onBindfs() : null;
  const strata = TARGETS.includes('strata') ? await onStrata() : null;
  const seconds = (side: Record<string, unknown> | null, run: string) => (side?.[run] as Outcome | undefined)?.seconds;
  const ok = (side: Record<string, unknown> | null, run: string) => (side?.[run] as Outcome | undefined)?.code === 0;
  const rows = ['fsx', 'fsstress'].map((run) => {
    const s = seconds(strata, run);
    const b = seconds(bindfs, run);
    return [run, s?.toFixed(1) ?? '-', ok(strata, run) ? 'ok' : 'FAILED', b?.toFixed(1) ?? '-', ok(bindfs, run) ? 'ok' : 'FAILED', s !== undefined && b !== undefined ? (s / b).toFixed(2) : '-'];
  });
  printTable(`mount stress: fsx ${FSX_OPS} ops, fsstress ${PROCS} × ${FSSTRESS_OPS} ops, seed ${SEED}`, ['run', 'strata s', 'strata', 'bindfs s', 'bindfs', 'strata ÷ bindfs time'], rows);
  const file = writeResult('mount-stress', { machine: machineInfo(), seed: SEED, fsxOps: FSX_OPS, fsstressOps: FSSTRESS_OPS, procs: PROCS, bindfs, strata });
  console.log(`wrote ${file}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
