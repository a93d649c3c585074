// Trees as the model tests compare them: a map from project path to what is there — a file (its
// bytes' BLAKE3, the exec bit), a symbolic link (its target) or a directory. Read from a directory on
// disk, from the engine over the control API (the current version of every path), or from a
// snapshot's entries; compared with a list of readable differences.

import { lstat, readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { hashBuffer } from '../../engine/hash.js';
import type { Entry, VersionRecord } from '../../engine/types.js';
import type { Workstation } from './workstation.js';

export type TreeNode = { type: 'file'; hash: string; size: number; executable: boolean } | { type: 'link'; target: string; hash: string } | { type: 'dir' };
export type Tree = Map<string, TreeNode>;

export function fileNode(content: string | Buffer, executable = false): TreeNode {
  const bytes = typeof content === 'string' ? Buffer.from(content) : content;
  return { type: 'file', hash: hashBuffer(bytes), size: bytes.length, executable };
}

export function linkNode(target: string): TreeNode {
  return { type: 'link', target, hash: hashBuffer(Buffer.from(target)) };
}

/** The tree under `dir` on disk, without `.strata/` (the project's own bookkeeping). */
export async function readDiskTree(dir: string, skip: (path: string) => boolean = (path) => path === '.strata'): Promise<Tree> {
  const tree: Tree = new Map();
  async function walk(rel: string): Promise<void> {
    const names = await readdir(rel === '' ? dir : join(dir, rel));
    for (const name of names) {
      const path = rel === '' ? name : `${rel}/${name}`;
      if (skip(path)) continue;
      const abs = join(dir, path);
      const st = await lstat(abs);
      if (st.isSymbolicLink()) tree.set(path, linkNode(await readlink(abs)));
      else if (st.isDirectory()) {
        tree.set(path, { type: 'dir' });
        await walk(path);
      } else if (st.isFile()) tree.set(path, fileNode(await readFile(abs), (st.mode & 0o100) !== 0));
    }
  }
  await walk('');
  return tree;
}

function entryNode(entry: Pick<Entry, 'contentHash' | 'size' | 'executable' | 'symlink'>, target?: string): TreeNode {
  if (entry.symlink) return { type: 'link', target: target ?? '?', hash: entry.contentHash };
  return { type: 'file', hash: entry.contentHash, size: entry.size, executable: entry.executable };
}

/** What reading a tree over the API needs: a daemon's control API or a server's (same routes). */
export type ApiView = Pick<Workstation, 'api' | 'bytes' | 'projectPath'>;

/** The engine's current tree: every directory listed through `fs/dir`, every file's current entry. */
export async function readEngineTree(ws: ApiView): Promise<Tree> {
  const tree: Tree = new Map();
  async function walk(path: string): Promise<void> {
    const listing = await ws.api<{ items: Array<{ path: string; type: 'file' | 'directory'; versionId?: string }> }>('GET', ws.projectPath(`/fs/dir?path=${encodeURIComponent(path)}`));
    for (const item of listing.items) {
      if (item.type === 'directory') {
        tree.set(item.path, { type: 'dir' });
        await walk(item.path);
      } else {
        // The version the listing names (immutable), not the path's entry now: one consistent view.
        const version = await ws.api<VersionRecord>('GET', ws.projectPath(`/history/${item.versionId}`));
        if (version.contentHash === null) throw new Error(`fs/dir lists ${item.path} at ${item.versionId}, a deletion`);
        tree.set(item.path, entryNode({ ...version, contentHash: version.contentHash }, version.symlink ? await readText(ws, `versionId=${version.versionId}`) : undefined));
      }
    }
  }
  await walk('');
  return tree;
}

/** A snapshot's files and links, as entries (directories are not part of a snapshot). */
export async function readSnapshotTree(ws: Workstation, snapshotId: string): Promise<Tree> {
  const tree: Tree = new Map();
  let cursor: string | undefined;
  do {
    const page = await ws.api<{ items: Entry[]; nextCursor?: string }>(
      'GET',
      ws.projectPath(`/fs/snapshots/${snapshotId}/entries?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
    );
    for (const entry of page.items) tree.set(entry.path, entryNode(entry, entry.symlink ? await readText(ws, `versionId=${entry.versionId}`) : undefined));
    cursor = page.nextCursor;
  } while (cursor);
  return tree;
}

async function readText(ws: ApiView, query: string): Promise<string> {
  return (await ws.bytes(ws.projectPath(`/fs/read?${query}`))).toString('utf8');
}

/** Files and links only (what the engine versions; directories are implied by them). */
export function filesOf(tree: Tree): Tree {
  return new Map([...tree].filter(([, node]) => node.type !== 'dir'));
}

export function describeNode(node: TreeNode | undefined): string {
  if (node === undefined) return 'nothing';
  if (node.type === 'dir') return 'a directory';
  if (node.type === 'link') return `a link -> ${node.target}`;
  return `a file of ${node.size} B (${node.hash.slice(0, 10)}${node.executable ? ', executable' : ''})`;
}

function sameNode(a: TreeNode, b: TreeNode): boolean {
  if (a.type !== b.type) return false;
  if (a.type === 'file' && b.type === 'file') return a.hash === b.hash && a.executable === b.executable;
  if (a.type === 'link' && b.type === 'link') return a.hash === b.hash;
  return true;
}

/** What differs between `actual` and `expected`, one line per path (empty: equal). */
export function diffTrees(actual: Tree, expected: Tree, what: { actual: string; expected: string }): string[] {
  return differingPaths(actual, expected).map((path) => `${path}: ${what.actual} has ${describeNode(actual.get(path))}, ${what.expected} ${describeNode(expected.get(path))}`);
}

/** The paths where two trees differ, in order. */
export function differingPaths(actual: Tree, expected: Tree): string[] {
  const paths = [...new Set([...actual.keys(), ...expected.keys()])].sort();
  return paths.filter((path) => {
    const a = actual.get(path);
    const e = expected.get(path);
    return a === undefined || e === undefined || !sameNode(a, e);
  });
}
