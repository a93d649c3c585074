// The single-workstation model (issue 38): one home, one project in watch or mount mode, no server.
// A sequence of generated steps — filesystem operations (fs-ops.ts) and the commands a user runs
// (`strata snapshot create`, `snapshot restore`, `restore VERSION`, tags, retention) and `kill -9` of
// the daemon — is applied to the real directory through the real CLI and to the model. After the
// sequence, once the workstation is quiet, everything must agree: disk = model, the engine's current
// version of every path = disk, every snapshot = the tree it was taken of, tags as set, `strata
// fsck` clean. Commands are checked as they run: exit codes, and the number of paths a snapshot
// restore says it changed.
//
// Semantics the model encodes (README, docs/daemon.md):
// - ignored names (.git/, *.swp) stay on disk and are never versioned or touched by a restore;
// - a snapshot pins the files on disk when it is taken — an edit still in its settle delay included;
// - a restore with edits still waiting to be captured versions them first and applies the restore on
//   top: the disk ends as the restore says;
// - directories are not part of a snapshot: a restore removes the files made since, and the
//   directories its removals empty, not empty directories made since, and does not recreate empty
//   ones; a directory that stands where a restored file goes and holds nothing but directories is
//   replaced by the file; one that holds files the project does not version (ignored names) makes
//   the restore refuse (exit 4, nothing changed).

import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import type { VersionRecord } from '../../engine/types.js';
import type { RunResult } from '../cli-harness.js';
import { applyFsOp, describeFsOp, type FsOp, fsOpArbitrary, gapArbitrary, SLOTS } from './fs-ops.js';
import { diffTrees, filesOf, readDiskTree, readEngineTree, readSnapshotTree, type Tree } from './tree.js';
import { ancestorsOf, isIgnoredPath, type ModelNode, parentOf, TreeModel, toTreeNode } from './tree-model.js';
import { type CaptureMode, createWorkstation, type Workstation } from './workstation.js';

export type CliOp =
  | { op: 'snapshot' }
  | { op: 'restoreSnapshot'; pick: number }
  | { op: 'restoreVersion'; slot: number; pick: number }
  | { op: 'tag'; pick: number; name: number }
  | { op: 'untag'; name: number }
  | { op: 'retention'; keep: number }
  | { op: 'kill9'; restart: boolean };

export type Step = { gap: number; action: FsOp | CliOp };

const pick = fc.nat({ max: 20 });
export const cliOpArbitrary: fc.Arbitrary<CliOp> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constant('snapshot' as const) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('restoreSnapshot' as const), pick }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('restoreVersion' as const), slot: fc.nat({ max: SLOTS.length - 1 }), pick }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('tag' as const), pick, name: fc.nat({ max: 2 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('untag' as const), name: fc.nat({ max: 2 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('retention' as const), keep: fc.nat({ max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('kill9' as const), restart: fc.boolean() }) },
);

/** A sequence: mostly filesystem operations, a command every few. */
export function sequenceArbitrary(maxLength: number): fc.Arbitrary<Step[]> {
  const step = fc.record({ gap: gapArbitrary, action: fc.oneof({ weight: 3, arbitrary: fsOpArbitrary }, { weight: 1, arbitrary: cliOpArbitrary }) });
  // Without bias: fast-check favours small arrays (most sequences had under 10 steps), and the
  // defects are in longer interleavings. Shrinking still goes down to one step.
  return fc.noBias(fc.array(step, { minLength: 1, maxLength, size: 'max' }));
}

export function describeStep(step: Step): string {
  const { action } = step;
  const gap = step.gap > 0 ? `sleep ${step.gap / 1000}; ` : '';
  switch (action.op) {
    case 'snapshot':
      return `${gap}strata snapshot create`;
    case 'restoreSnapshot':
      return `${gap}strata snapshot restore #${action.pick} (mod snapshots)`;
    case 'restoreVersion':
      return `${gap}strata restore <version #${action.pick} of ${SLOTS[action.slot]}>`;
    case 'tag':
      return `${gap}strata tag add <snapshot #${action.pick}> t${action.name}`;
    case 'untag':
      return `${gap}strata tag rm t${action.name}`;
    case 'retention':
      return `${gap}strata retention set ${action.keep}`;
    case 'kill9':
      return `${gap}kill -9 daemon${action.restart ? '; restart' : ' (restart at the next command)'}`;
    default:
      return `${gap}${describeFsOp(action)}`;
  }
}

export interface SequenceStats {
  operations: number;
  skipped: number;
  faults: number;
  restores: number;
}

export interface SequenceResult {
  failures: string[];
  stats: SequenceStats;
  /** what was done, as shell lines (skipped steps marked) */
  transcript: string[];
}

interface ModelSnapshot {
  seq: number;
  snapshotId: string;
  files: Map<string, ModelNode>;
}

/** Runs one sequence on a fresh workstation and returns what disagreed (empty: all agreed). */
export async function runSequence(mode: CaptureMode, steps: Step[], options: { log?: (line: string) => void } = {}): Promise<SequenceResult> {
  const root = await mkdtemp(join(process.env['STRATA_MODEL_TMP'] ?? tmpdir(), `strata-model-${mode}-`));
  const ws = await createWorkstation({ root, mode });
  const model = new TreeModel();
  const snapshots: ModelSnapshot[] = [];
  const tags = new Map<string, string>();
  const failures: string[] = [];
  const stats: SequenceStats = { operations: 0, skipped: 0, faults: 0, restores: 0 };
  const log = options.log ?? (() => undefined);
  const transcript: string[] = [];
  const expectCode = (what: string, result: RunResult, code: number) => {
    if (result.code !== code) failures.push(`${what}: exit ${result.code}, expected ${code}\n${result.stdout}${result.stderr}`);
  };
  try {
    await ws.start();
    for (const [index, step] of steps.entries()) {
      if (failures.length > 0) break;
      if (step.gap > 0) await new Promise((resolve) => setTimeout(resolve, step.gap));
      const { action } = step;
      const label = `step ${index + 1} (${describeStep(step)})`;
      let done = true;
      let line = describeStep(step);
      switch (action.op) {
        case 'snapshot': {
          await ensureRunning(ws);
          const files = model.trackedNodes();
          const result = await ws.cli(['snapshot', 'create', '--json']);
          line = 'strata snapshot create';
          expectCode(label, result, 0);
          if (result.code === 0) {
            const created = JSON.parse(result.stdout) as { snapshotId: string; seq: number };
            snapshots.push({ seq: created.seq, snapshotId: created.snapshotId, files });
          }
          break;
        }
        case 'restoreSnapshot': {
          if (snapshots.length === 0) {
            done = false;
            break;
          }
          await ensureRunning(ws);
          const snapshot = snapshots[action.pick % snapshots.length]!;
          const expected = restoreSnapshotInModel(model, snapshot.files);
          const result = await ws.cli(['snapshot', 'restore', String(snapshot.seq), '--json']);
          line = `strata snapshot restore ${snapshot.seq}  # exit ${result.code}`;
          stats.restores += 1;
          if (expected.refused !== null) {
            expectCode(`${label}, which must refuse (${expected.refused})`, result, 4);
          } else {
            expectCode(label, result, 0);
            if (result.code === 0) {
              const { changed } = JSON.parse(result.stdout) as { changed: number };
              if (changed !== expected.changed) failures.push(`${label}: said ${changed} path(s) changed, the model ${expected.changed}`);
              model.nodes.clear();
              for (const [path, node] of expected.model.nodes) model.nodes.set(path, node);
            }
          }
          break;
        }
        case 'restoreVersion': {
          await ensureRunning(ws);
          const path = SLOTS[action.slot]!;
          const history = await ws.api<{ items: VersionRecord[] }>('GET', ws.projectPath(`/history?path=${encodeURIComponent(path)}&limit=1000`));
          const versions = history.items.filter((v) => v.contentHash !== null && v.path === path);
          if (versions.length === 0) {
            done = false;
            break;
          }
          const version = versions[action.pick % versions.length]!;
          const bytes = await ws.bytes(ws.projectPath(`/fs/read?versionId=${version.versionId}`));
          const node: ModelNode = version.symlink ? { type: 'link', target: bytes.toString('utf8') } : { type: 'file', data: bytes.toString('utf8'), executable: version.executable };
          const expected = restoreVersionInModel(model, path, node);
          const result = await ws.cli(['restore', version.versionId]);
          line = `strata restore ${version.versionId}  # ${path}: ${JSON.stringify(bytes.toString('utf8'))}${version.symlink ? ' (link)' : ''}, exit ${result.code}`;
          stats.restores += 1;
          if (expected.refused !== null) expectCode(`${label} of ${version.versionId}, which must refuse (${expected.refused})`, result, 4);
          else {
            expectCode(`${label} of ${version.versionId}`, result, 0);
            if (result.code === 0) {
              model.nodes.clear();
              for (const [p, n] of expected.model.nodes) model.nodes.set(p, n);
            }
          }
          break;
        }
        case 'tag': {
          if (snapshots.length === 0) {
            done = false;
            break;
          }
          await ensureRunning(ws);
          const snapshot = snapshots[action.pick % snapshots.length]!;
          const name = `t${action.name}`;
          const result = await ws.cli(['tag', 'add', String(snapshot.seq), name]);
          expectCode(label, result, tags.has(name) ? 4 : 0);
          if (!tags.has(name) && result.code === 0) tags.set(name, snapshot.snapshotId);
          break;
        }
        case 'untag': {
          await ensureRunning(ws);
          const name = `t${action.name}`;
          const result = await ws.cli(['tag', 'rm', name]);
          expectCode(label, result, tags.has(name) ? 0 : 3);
          tags.delete(name);
          break;
        }
        case 'retention': {
          await ensureRunning(ws);
          expectCode(label, await ws.cli(['retention', 'set', String(action.keep)]), 0);
          break;
        }
        case 'kill9': {
          await ws.kill9();
          stats.faults += 1;
          // A mount killed is a dead mount point until the next start: nothing can be done there.
          if (action.restart || ws.mode === 'mount') await ws.start();
          break;
        }
        default: {
          const did = await applyFsOp(ws.dir, model, action);
          done = did !== null;
          if (did !== null) line = did;
        }
      }
      if (done) stats.operations += 1;
      else stats.skipped += 1;
      const shown = `${step.gap > 0 && !line.startsWith('sleep') ? `sleep ${step.gap / 1000}; ` : ''}${line}`;
      transcript.push(done ? shown : `# skipped: ${describeStep(step)}`);
      log(`${done ? '  ' : '- '}${index + 1}. ${shown}`);
    }
    if (failures.length === 0) failures.push(...(await checkQuiet(ws, model, snapshots, tags)));
  } catch (error) {
    failures.push(`error: ${(error as Error).stack ?? String(error)}`);
  } finally {
    if (failures.length > 0) {
      const status = await ws.status().catch(() => null);
      if (status !== null && (status.warnings.length > 0 || status.errors.length > 0)) failures.push(`status warnings: ${JSON.stringify(status.warnings)} errors: ${JSON.stringify(status.errors)}`);
    }
    await ws.dispose();
  }
  return { failures, stats, transcript };
}

async function ensureRunning(ws: Workstation): Promise<void> {
  if (!ws.running) await ws.start();
}

/**
 * The model after a snapshot restore, the number of paths it changes, or why it is refused: a
 * directory in the way of a restored file that holds files the project does not version.
 */
export function restoreSnapshotInModel(model: TreeModel, files: Map<string, ModelNode>): { model: TreeModel; changed: number; refused: string | null } {
  const next = model.clone();
  let changed = 0;
  const current = model.trackedNodes();
  for (const [path] of current) {
    if (files.has(path)) continue;
    changed += 1;
    next.nodes.delete(path);
    // Both modes remove the directories a restore's removals empty: watch mode on disk
    // (materialize.ts), a mount its own directories (namespace.ts, docs/mount.md).
    next.pruneEmpty(parentOf(path));
  }
  for (const [path, node] of files) {
    const now = current.get(path);
    const same = now !== undefined && now.type === node.type && JSON.stringify(now) === JSON.stringify(node);
    if (!same) changed += 1;
    const blocked = placeInModel(next, path, node);
    if (blocked !== null) return { model, changed: 0, refused: blocked };
  }
  return { model: next, changed, refused: null };
}

/** The model after `strata restore VERSION` of `path`, or why the engine or the daemon refuses it. */
export function restoreVersionInModel(model: TreeModel, path: string, node: ModelNode): { model: TreeModel; refused: string | null } {
  const tracked = model.trackedNodes();
  if ([...tracked.keys()].some((p) => p.startsWith(`${path}/`))) return { model, refused: `${path} is a directory of the project` };
  const fileAbove = ancestorsOf(path).find((dir) => tracked.has(dir));
  if (fileAbove !== undefined) return { model, refused: `${fileAbove} is a file of the project` };
  const next = model.clone();
  const blocked = placeInModel(next, path, node);
  return blocked === null ? { model: next, refused: null } : { model, refused: blocked };
}

/** Puts a restored file or link at `path`: an empty directory tree in its place goes; anything else there refuses. */
function placeInModel(model: TreeModel, path: string, node: ModelNode): string | null {
  const there = model.get(path);
  if (there?.type === 'dir') {
    if (!model.onlyDirsBelow(path)) return `${path} is a directory holding files the project does not version`;
    model.removeTree(path);
  }
  model.ensureParents(path);
  model.nodes.set(path, { ...node });
  return null;
}

/** The checks after a sequence, on a quiet workstation. */
export async function checkQuiet(ws: Workstation, model: TreeModel, snapshots: ModelSnapshot[], tags: Map<string, string>): Promise<string[]> {
  const failures: string[] = [];
  await ensureRunning(ws);
  await ws.quiet();
  const disk = await readDiskTree(ws.dir, (path) => path === '.strata');
  failures.push(...diffTrees(disk, model.disk(), { actual: 'disk', expected: 'the model' }).map((line) => `disk ≠ model: ${line}`));
  const engine = filesOf(await readEngineTree(ws));
  const diskFiles: Tree = new Map([...filesOf(disk)].filter(([path]) => !isIgnoredPath(path)));
  failures.push(...diffTrees(engine, diskFiles, { actual: 'the engine', expected: 'disk' }).map((line) => `engine ≠ disk: ${line}`));
  for (const snapshot of snapshots) {
    const actual = await readSnapshotTree(ws, snapshot.snapshotId);
    const expected: Tree = new Map([...snapshot.files].map(([path, node]) => [path, toTreeNode(node)]));
    failures.push(...diffTrees(actual, expected, { actual: `snapshot ${snapshot.seq}`, expected: 'the model' }).map((line) => `snapshot ≠ model: ${line}`));
  }
  const tagList = await ws.api<{ items: Array<{ tag: string; snapshotId: string }> }>('GET', ws.projectPath('/fs/tags'));
  const actualTags = new Map(tagList.items.map((t) => [t.tag, t.snapshotId]));
  for (const name of new Set([...actualTags.keys(), ...tags.keys()])) {
    if (actualTags.get(name) !== tags.get(name)) failures.push(`tag ${name}: ${actualTags.get(name) ?? 'none'}, the model ${tags.get(name) ?? 'none'}`);
  }
  const fsck = await ws.cli(['fsck']);
  if (fsck.code !== 0) failures.push(`strata fsck exited ${fsck.code}: ${fsck.stdout}${fsck.stderr}`);
  return failures;
}
