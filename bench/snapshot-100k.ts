// Benchmark 3: snapshot create and restore on a 100,000-file project (in process). A restore only
// repoints paths, so the content store's byte total must not change. Peer for context: git commit of
// the same tree and git checkout of the old commit.
import { pathToFileURL } from 'node:url';
import { BENCH_TMP, freshDir, machineInfo, removeDir, writeResult } from './lib/env.js';
import { runPool } from './lib/pool.js';
import { settleDisk, timed } from './lib/proc.js';
import { type GitPeer, gitSnapshotPeer } from './lib/snapshot-git.js';
import { type Summary, summarize, target } from './lib/stats.js';
import { BENCH_ACTOR, type BenchEngine, openBenchEngine } from './lib/strata.js';
import { printTable, printTargets, spread } from './lib/table.js';

export const FILES = Number(process.env['BENCH_SNAPSHOT_FILES'] ?? 100_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
export const CHANGE = Math.max(1, Math.floor(FILES / 100)); // 1,000 of 100,000
const IN_FLIGHT = 512;

export const pathOf = (i: number) => `tree/d${String(i % 1000).padStart(3, '0')}/file-${i}.txt`;
export const contentOf = (i: number, rev: number) => Buffer.from(`file ${i} revision ${rev}\n${'x'.repeat(i % 97)}\n`);

/**
 * Round r's change set: every 7th file from an offset, so `modify` and `remove` are disjoint (different
 * residues mod 7) and every round changes files the first snapshot pins; `add` paths are new each round.
 */
export function changeSet(round: number): { modify: number[]; remove: number[]; add: number[] } {
  const base = round * 3 * CHANGE;
  const range = (start: number) => Array.from({ length: CHANGE }, (_, k) => (start + k * 7) % FILES);
  return {
    modify: range(base),
    remove: range(base + 1),
    add: Array.from({ length: CHANGE }, (_, k) => FILES + round * CHANGE + k),
  };
}

async function storeBytes(bench: BenchEngine): Promise<{ bytes: number; objects: number }> {
  let bytes = 0;
  let objects = 0;
  for await (const info of bench.local.store.list()) {
    bytes += info.size;
    objects += 1;
  }
  return { bytes, objects };
}

async function writeAll(bench: BenchEngine, indexes: number[], rev: number): Promise<void> {
  const { engine } = bench.local;
  await runPool(indexes.length, IN_FLIGHT, (k) =>
    engine.writeFile({ projectId: bench.projectId, path: pathOf(indexes[k]!), actor: BENCH_ACTOR, content: contentOf(indexes[k]!, rev) }),
  );
}

export interface RestoreSample {
  seconds: number;
  changed: number;
  bytesAdded: number;
  objectsAdded: number;
}

/** Restores `snapshotId`, timed, and checks that no content was stored and the tree matches it. */
async function timedRestore(bench: BenchEngine, snapshotId: string): Promise<RestoreSample> {
  const { engine } = bench.local;
  const before = await storeBytes(bench);
  await settleDisk();
  let changed = 0;
  const seconds = await timed(async () => {
    changed = (await engine.restoreSnapshot({ projectId: bench.projectId, snapshotId, actor: BENCH_ACTOR })).changed;
  });
  const after = await storeBytes(bench);
  const diff = await engine.diffSnapshots({ projectId: bench.projectId, from: snapshotId });
  if (diff.length !== 0) throw new Error(`after restoring ${snapshotId}, ${diff.length} paths still differ`);
  return { seconds, changed, bytesAdded: after.bytes - before.bytes, objectsAdded: after.objects - before.objects };
}

export interface StrataSnapshotSamples {
  setupSeconds: number;
  /** NaN when the worst case was not measured */
  rewriteSeconds: number;
  createSamples: number[];
  restoreSamples: RestoreSample[];
  worstSamples: RestoreSample[];
}

/**
 * The Strata side on an open engine (SQLite in this benchmark; bench/server-storage.ts passes one on
 * Postgres): FILES writes, ROUNDS creates, ROUNDS restores after a change set each, then (unless
 * `worstCase` is false) the all-changed restores. The caller opens and closes the engine.
 */
export async function measureStrataSnapshots(
  bench: BenchEngine,
  options: { rounds?: number; worstCase?: boolean; log?: (line: string) => void } = {},
): Promise<StrataSnapshotSamples> {
  const rounds = options.rounds ?? ROUNDS;
  const log = options.log ?? ((line: string) => console.log(line));
  const { engine } = bench.local;
  const all = Array.from({ length: FILES }, (_, i) => i);
  const setupSeconds = await timed(() => writeAll(bench, all, 0));
  log(`  wrote ${FILES} files in ${setupSeconds.toFixed(1)} s (${(FILES / setupSeconds).toFixed(0)} versions/s)`);

  const createSamples: number[] = [];
  const snapshots: string[] = [];
  for (let round = 0; round < rounds; round++) {
    await settleDisk();
    let id = '';
    const seconds = await timed(async () => {
      id = (await engine.createSnapshot({ projectId: bench.projectId, message: `s${round}`, actor: BENCH_ACTOR })).snapshotId;
    });
    createSamples.push(seconds);
    snapshots.push(id);
    log(`  snapshot create ${round + 1}: ${(seconds * 1000).toFixed(0)} ms`);
  }
  const first = snapshots[0]!;

  const restoreSamples: RestoreSample[] = [];
  for (let round = 0; round < rounds; round++) {
    const set = changeSet(round);
    await writeAll(bench, set.modify, round + 1);
    await runPool(set.remove.length, IN_FLIGHT, (k) => engine.deleteFile({ projectId: bench.projectId, path: pathOf(set.remove[k]!), actor: BENCH_ACTOR }));
    await writeAll(bench, set.add, round + 1);
    const sample = await timedRestore(bench, first);
    restoreSamples.push(sample);
    log(`  restore after ${set.modify.length}/${set.remove.length}/${set.add.length} changes: ${(sample.seconds * 1000).toFixed(0)} ms, ${sample.changed} paths, +${sample.bytesAdded} content bytes`);
  }

  // Worst case: every file changed. Written once; then restores alternate between the first snapshot
  // and a snapshot of the all-changed tree, each of which changes all 100,000 paths.
  const worstSamples: RestoreSample[] = [];
  let rewriteSeconds = Number.NaN;
  if (options.worstCase !== false) {
    rewriteSeconds = await timed(() => writeAll(bench, all, 100));
    const changedAll = (await engine.createSnapshot({ projectId: bench.projectId, message: 'all changed', actor: BENCH_ACTOR })).snapshotId;
    for (let round = 0; round < rounds; round++) {
      const sample = await timedRestore(bench, first);
      worstSamples.push(sample);
      log(`  restore after all ${FILES} changed: ${(sample.seconds * 1000).toFixed(0)} ms, ${sample.changed} paths, +${sample.bytesAdded} content bytes`);
      if (round < rounds - 1) await engine.restoreSnapshot({ projectId: bench.projectId, snapshotId: changedAll, actor: BENCH_ACTOR });
    }
  }
  return { setupSeconds, rewriteSeconds, createSamples, restoreSamples, worstSamples };
}

async function main(): Promise<void> {
  const machine = machineInfo();
  console.log(`snapshot-100k: ${FILES} files, ${ROUNDS} rounds, scratch ${BENCH_TMP}`);
  const home = freshDir('snapshot-strata-home');
  const bench = await openBenchEngine(home);
  const { setupSeconds, rewriteSeconds, createSamples, restoreSamples, worstSamples } = await measureStrataSnapshots(bench);
  await bench.local.close();
  removeDir(home);

  const gitPeer: GitPeer = await gitSnapshotPeer({ files: FILES, rounds: ROUNDS, pathOf, contentOf, changeSet });
  report({ machine, setupSeconds, rewriteSeconds, createSamples, restoreSamples, worstSamples, gitPeer });
}

function report(r: {
  machine: ReturnType<typeof machineInfo>;
  setupSeconds: number;
  rewriteSeconds: number;
  createSamples: number[];
  restoreSamples: RestoreSample[];
  worstSamples: RestoreSample[];
  gitPeer: GitPeer;
}): void {
  const ms = (s: number[]): Summary => summarize(s.map((x) => x * 1000));
  const create = ms(r.createSamples);
  const restore = ms(r.restoreSamples.map((s) => s.seconds));
  const worst = ms(r.worstSamples.map((s) => s.seconds));
  const bytesAdded = Math.max(...[...r.restoreSamples, ...r.worstSamples].map((s) => s.bytesAdded));
  const git = r.gitPeer;
  printTable(`Snapshots of a ${FILES}-file project, ms, median (min–max) of ${r.createSamples.length}`, ['operation', 'strata ms', 'git ms (context)', 'strata ÷ git time'], [
    ['snapshot create  |  git add -A + commit', spread(create), spread(git.commitMs), (create.median / git.commitMs.median).toFixed(3)],
    [`restore after ${CHANGE}/${CHANGE}/${CHANGE} mod/del/add  |  git checkout`, spread(restore), spread(git.checkoutMs), (restore.median / git.checkoutMs.median).toFixed(3)],
    [`restore after all ${FILES} changed  |  git checkout`, spread(worst), spread(git.worstCheckoutMs), (worst.median / git.worstCheckoutMs.median).toFixed(3)],
  ]);
  console.log(`\nsetup: ${FILES} files written in ${r.setupSeconds.toFixed(1)} s; all rewritten in ${r.rewriteSeconds.toFixed(1)} s; git work tree written in ${git.treeWriteSeconds.toFixed(1)} s`);
  console.log(`content bytes added by restores: ${[...r.restoreSamples, ...r.worstSamples].map((s) => s.bytesAdded).join(', ')} (objects: ${[...r.restoreSamples, ...r.worstSamples].map((s) => s.objectsAdded).join(', ')})`);
  const targets = [
    target('snapshot create (ms)', create.median, '<=', 1000, ' ms'),
    target(`restore after ${CHANGE * 3} changes (ms)`, restore.median, '<=', 1000, ' ms'),
    target('content bytes added by any restore', bytesAdded, '<=', 0),
  ];
  printTargets(targets);
  const file = writeResult('snapshot-100k', {
    benchmark: 'snapshot-100k',
    machine: r.machine,
    params: { files: FILES, changedPerKind: CHANGE, rounds: r.createSamples.length, writesInFlight: IN_FLIGHT },
    setup: { writeSeconds: r.setupSeconds, rewriteAllSeconds: r.rewriteSeconds, versionsPerSecond: Math.round(FILES / r.setupSeconds) },
    strata: { createMs: create, restoreMs: restore, worstCaseRestoreMs: worst, restores: r.restoreSamples, worstCaseRestores: r.worstSamples },
    git,
    targets,
    notes: 'worst case (no target): all files changed, restores alternate between the first snapshot and the all-changed one',
  });
  console.log(`\nresult: ${file}`);
}

// Run as a script (node dist/bench/snapshot-100k.js, as bench/run.ts does); imported, only its functions.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
