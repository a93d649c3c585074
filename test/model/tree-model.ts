// The model of a project directory: what must be on disk (files with their bytes and exec bit,
// links, directories, ignored files) and therefore what the engine's current versions must be (the
// same minus directories and ignored names). Pure: no filesystem, no processes. Operations that a
// real filesystem would refuse are refused here too (`false`), so a generated operation is applied
// to disk only when the model can follow it.

import { fileNode, linkNode, type Tree, type TreeNode } from './tree.js';

export type ModelNode = { type: 'file'; data: string; executable: boolean } | { type: 'link'; target: string } | { type: 'dir' };

/** Names the daemon never versions (README "Ignored"): the ones the model uses. */
export function isIgnoredPath(path: string): boolean {
  return path.split('/').some((part) => part === '.git' || part === '.strata' || part.endsWith('.swp'));
}

export function parentOf(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash === -1 ? '' : path.slice(0, slash);
}

export function ancestorsOf(path: string): string[] {
  const out: string[] = [];
  for (let dir = parentOf(path); dir !== ''; dir = parentOf(dir)) out.unshift(dir);
  return out;
}

export class TreeModel {
  readonly nodes = new Map<string, ModelNode>();

  clone(): TreeModel {
    const copy = new TreeModel();
    for (const [path, node] of this.nodes) copy.nodes.set(path, { ...node });
    return copy;
  }

  get(path: string): ModelNode | undefined {
    return this.nodes.get(path);
  }

  /** Every ancestor is a directory or absent (nothing would be written through a file or a link). */
  parentsOk(path: string): boolean {
    return ancestorsOf(path).every((dir) => {
      const node = this.nodes.get(dir);
      return node === undefined || node.type === 'dir';
    });
  }

  ensureParents(path: string): void {
    for (const dir of ancestorsOf(path)) if (!this.nodes.has(dir)) this.nodes.set(dir, { type: 'dir' });
  }

  /** The paths below `path` (not itself). */
  below(path: string): string[] {
    const prefix = `${path}/`;
    return [...this.nodes.keys()].filter((p) => p.startsWith(prefix));
  }

  /** Removes `path` and everything below it. */
  removeTree(path: string): void {
    for (const p of this.below(path)) this.nodes.delete(p);
    this.nodes.delete(path);
  }

  /** Directories, from `dir` up, that are empty: removed (what a restore's removal of a file does). */
  pruneEmpty(dir: string): void {
    for (let d = dir; d !== ''; d = parentOf(d)) {
      if (this.nodes.get(d)?.type !== 'dir' || this.below(d).length > 0) return;
      this.nodes.delete(d);
    }
  }

  /** `path` is a directory holding nothing but directories. */
  onlyDirsBelow(path: string): boolean {
    return this.below(path).every((p) => this.nodes.get(p)!.type === 'dir');
  }

  /** Moves `from` (and what is below it) to `to`, which must be free. */
  move(from: string, to: string): void {
    const moved = [from, ...this.below(from)].map((p) => [p, this.nodes.get(p)!] as const);
    for (const [p] of moved) this.nodes.delete(p);
    for (const [p, node] of moved) this.nodes.set(to + p.slice(from.length), node);
  }

  /** The files and links the engine must hold as current versions (not ignored), as model nodes. */
  trackedNodes(): Map<string, ModelNode> {
    return new Map([...this.nodes].filter(([path, node]) => node.type !== 'dir' && !isIgnoredPath(path)).map(([path, node]) => [path, { ...node }]));
  }

  /** What the engine must hold as current versions: files and links that are not ignored. */
  tracked(): Tree {
    const tree: Tree = new Map();
    for (const [path, node] of this.nodes) {
      if (node.type === 'dir' || isIgnoredPath(path)) continue;
      tree.set(path, toTreeNode(node));
    }
    return tree;
  }

  /** What must be on disk. */
  disk(): Tree {
    const tree: Tree = new Map();
    for (const [path, node] of this.nodes) tree.set(path, toTreeNode(node));
    return tree;
  }
}

export function toTreeNode(node: ModelNode): TreeNode {
  if (node.type === 'dir') return { type: 'dir' };
  if (node.type === 'link') return linkNode(node.target);
  return fileNode(node.data, node.executable);
}
