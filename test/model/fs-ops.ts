// Filesystem operations for the model tests: generated as plain data (fast-check arbitraries over a
// small set of path slots, so paths collide often: a file becomes a directory, a rename lands on a
// file), applied to the model first and, when the model can follow them, to the real directory with
// ordinary syscalls — as a tool would. An operation the model refuses (a write below a file, a
// rename into itself) is skipped, so a shrunk sequence stays meaningful.

import { appendFile, chmod, mkdir, rename, rm, symlink, truncate, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { isIgnoredPath, parentOf, type TreeModel } from './tree-model.js';

/** Paths the operations pick from: a few names at three depths, so that they collide. */
export const SLOTS = ['a', 'b', 'c', 'a/a', 'a/b', 'b/a', 'b/b', 'c/a', 'a/a/a', 'a/a/b', 'b/a/a'] as const;
/** Ignored names (never versioned, never touched by a restore). */
export const IGNORED_SLOTS = ['x.swp', 'a/x.swp', 'b/a/y.swp', '.git/HEAD', 'a/.git/HEAD'] as const;
/** Link targets: inside the project or not, dangling or not. */
export const LINK_TARGETS = ['a', '../b', 'a/a', '/nonexistent/strata-model', 'b/a'] as const;
/** A pause before an operation (ms): mostly none, sometimes within a settle delay, sometimes past it. */
export const GAPS = [0, 0, 0, 0, 20, 150, 700] as const;

export type FsOp =
  | { op: 'write'; slot: number; n: number }
  | { op: 'append'; slot: number; n: number }
  | { op: 'truncate'; slot: number }
  | { op: 'chmod'; slot: number }
  | { op: 'delete'; slot: number }
  | { op: 'rename'; slot: number; to: number }
  | { op: 'swap'; slot: number; n: number }
  | { op: 'mkdir'; slot: number }
  | { op: 'symlink'; slot: number; target: number }
  | { op: 'ignored'; slot: number; n: number };

const slot = fc.nat({ max: SLOTS.length - 1 });
const n = fc.nat({ max: 99 });

export const fsOpArbitrary: fc.Arbitrary<FsOp> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant('write' as const), slot, n }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('append' as const), slot, n }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('truncate' as const), slot }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('chmod' as const), slot }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('delete' as const), slot }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('rename' as const), slot, to: slot }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('swap' as const), slot, n }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('mkdir' as const), slot }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('symlink' as const), slot, target: fc.nat({ max: LINK_TARGETS.length - 1 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('ignored' as const), slot: fc.nat({ max: IGNORED_SLOTS.length - 1 }), n }) },
);

export const gapArbitrary = fc.constantFrom(...GAPS);

/** The content a write of `n` puts in a file (short and distinct). */
export const contentOf = (n: number) => `v${n}\n`;

/** The operation as generated (its slots unresolved), for a failure report's data. */
export function describeFsOp(op: FsOp): string {
  return JSON.stringify(op);
}

/**
 * The path an operation on an existing node acts on: its slot picks among the paths the model has
 * (so few operations are skipped), sorted, of the kind it needs.
 */
function existing(model: TreeModel, slot: number, want: (type: string) => boolean): string | undefined {
  const candidates = [...model.nodes].filter(([path, node]) => want(node.type) && !isIgnoredPath(path)).map(([path]) => path).sort();
  return candidates.length === 0 ? undefined : candidates[slot % candidates.length];
}

async function mkdirs(root: string, model: TreeModel, path: string): Promise<void> {
  const parent = parentOf(path);
  if (parent !== '') await mkdir(join(root, parent), { recursive: true });
  model.ensureParents(path);
}

/**
 * Applies `op` to the model and, if the model accepts it, to the directory `root`. Returns what was
 * done, as a shell line, or null when skipped (nothing was done).
 */
export async function applyFsOp(root: string, model: TreeModel, op: FsOp): Promise<string | null> {
  let path: string | undefined;
  switch (op.op) {
    case 'ignored':
      path = IGNORED_SLOTS[op.slot]!;
      break;
    case 'write':
    case 'mkdir':
    case 'symlink':
      path = SLOTS[op.slot]!;
      break;
    case 'append':
    case 'truncate':
    case 'chmod':
      path = existing(model, op.slot, (type) => type === 'file');
      break;
    default:
      path = existing(model, op.slot, () => true);
  }
  if (path === undefined) return null;
  const abs = join(root, path);
  const node = model.get(path);
  switch (op.op) {
    case 'write':
    case 'ignored': {
      if (!model.parentsOk(path) || node?.type === 'dir') return null;
      await mkdirs(root, model, path);
      // A link is replaced, never written through.
      if (node?.type === 'link') await unlink(abs);
      await writeFile(abs, contentOf(op.n));
      model.nodes.set(path, { type: 'file', data: contentOf(op.n), executable: node?.type === 'file' ? node.executable : false });
      return `echo v${op.n} > ${path}`;
    }
    case 'append': {
      if (node?.type !== 'file') return null;
      await appendFile(abs, `+${op.n}\n`);
      node.data += `+${op.n}\n`;
      return `echo +${op.n} >> ${path}`;
    }
    case 'truncate': {
      if (node?.type !== 'file') return null;
      const keep = Math.floor(Buffer.byteLength(node.data) / 2);
      await truncate(abs, keep);
      node.data = Buffer.from(node.data).subarray(0, keep).toString('latin1');
      return `truncate -s ${keep} ${path}`;
    }
    case 'chmod': {
      if (node?.type !== 'file') return null;
      node.executable = !node.executable;
      await chmod(abs, node.executable ? 0o755 : 0o644);
      return `chmod ${node.executable ? '+x' : '-x'} ${path}`;
    }
    case 'delete': {
      if (node === undefined) return null;
      if (node.type === 'dir') await rm(abs, { recursive: true });
      else await unlink(abs);
      model.removeTree(path);
      return `rm -r ${path}`;
    }
    case 'rename': {
      const to = SLOTS[op.to]!;
      const target = model.get(to);
      if (node === undefined || to === path || to.startsWith(`${path}/`) || path.startsWith(`${to}/`) || !model.parentsOk(to)) return null;
      if (target !== undefined) {
        const fileLike = (t: string) => t === 'file' || t === 'link';
        if (fileLike(node.type) !== fileLike(target.type)) return null;
        if (target.type === 'dir' && model.below(to).length > 0) return null;
      }
      await mkdirs(root, model, to);
      await rename(abs, join(root, to));
      model.removeTree(to);
      model.move(path, to);
      return `mv ${path} ${to}`;
    }
    case 'swap': {
      if (node === undefined || !model.parentsOk(path)) return null;
      if (node.type === 'dir') {
        await rm(abs, { recursive: true });
        model.removeTree(path);
        await writeFile(abs, contentOf(op.n));
        model.nodes.set(path, { type: 'file', data: contentOf(op.n), executable: false });
      } else {
        await unlink(abs);
        await mkdir(abs);
        model.nodes.set(path, { type: 'dir' });
        if (op.n % 3 !== 0) {
          await writeFile(join(abs, 'a'), contentOf(op.n));
          model.nodes.set(`${path}/a`, { type: 'file', data: contentOf(op.n), executable: false });
        }
      }
      return node.type === 'dir' ? `rm -r ${path}; echo v${op.n} > ${path}` : `rm ${path}; mkdir ${path}${op.n % 3 === 0 ? '' : `; echo v${op.n} > ${path}/a`}`;
    }
    case 'mkdir': {
      if (node !== undefined || !model.parentsOk(path)) return null;
      await mkdir(abs, { recursive: true });
      model.ensureParents(path);
      model.nodes.set(path, { type: 'dir' });
      return `mkdir -p ${path}`;
    }
    case 'symlink': {
      if (node?.type === 'dir' || !model.parentsOk(path)) return null;
      await mkdirs(root, model, path);
      const target = LINK_TARGETS[op.target]!;
      // ln -sfn: the old file or link goes, the new link takes its name.
      if (node !== undefined) await unlink(abs);
      await symlink(target, abs);
      model.nodes.set(path, { type: 'link', target });
      return `ln -sfn ${target} ${path}`;
    }
  }
}

export { isIgnoredPath };
