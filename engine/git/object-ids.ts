// Git object ids (SHA-1, git's default object format) of what the fast-import writer produces, computed
// without git: blob ids from content, tree ids from a tree kept up to date change by change, commit ids
// from tree, parent, identity and message. They let the server name its chain in git terms (refs, the
// parent a pushed stream must continue from) exactly as `git fast-import` of our export would.
import { createHash } from 'node:crypto';
import { StrataError } from '../errors.js';
import { compareUtf8 } from '../paths.js';
import type { GitFileMode } from './export-commit.js';

export type { GitFileMode };
const TREE_MODE = '40000';

/** SHA-1 of `blob <size>\0<bytes>`; the bytes are streamed (one chunk at a time on this thread). */
export async function gitBlobId(size: number, bytes: AsyncIterable<Uint8Array>): Promise<string> {
  const hash = createHash('sha1');
  hash.update(`blob ${size}\0`);
  let seen = 0;
  for await (const chunk of bytes) {
    hash.update(chunk);
    seen += chunk.length;
  }
  if (seen !== size) throw new StrataError('CONTENT_CORRUPT', { message: `Expected ${size} bytes for a git blob, read ${seen}`, details: { expected: size, actual: seen } });
  return hash.digest('hex');
}

export function gitCommitId(fields: { tree: string; parent: string | null; author: string; committer: string; message: string }): string {
  const body = Buffer.from(
    `tree ${fields.tree}\n${fields.parent === null ? '' : `parent ${fields.parent}\n`}author ${fields.author}\ncommitter ${fields.committer}\n\n${fields.message}`,
    'utf8',
  );
  return createHash('sha1').update(`commit ${body.length}\0`).update(body).digest('hex');
}

interface TreeEntry {
  mode: string;
  /** hex object id; for a subtree, valid only when the subtree is not dirty */
  id: string;
  /** the entry as its tree object holds it (`<mode> <name>\0<20-byte id>`), made when first needed */
  row?: Buffer;
}

interface TreeDir {
  entries: Map<string, TreeEntry>;
  /** names in git's order; null once a name is added or removed (an id change keeps the order) */
  order: string[] | null;
}

/**
 * A project tree in git terms, updated path by path. Only directories on the path of a change are
 * re-hashed, so following a chain of snapshots costs its changes, not files × snapshots; and a
 * directory re-hashed keeps its order and its other entries' encoded rows, so a change to one file
 * among thousands in a directory does not re-sort or re-encode them (bench/git-push.ts).
 */
export class GitTree {
  private readonly dirs = new Map<string, TreeDir>([['', { entries: new Map(), order: null }]]);
  private readonly dirty = new Set<string>(['']);
  private rootTree = '';

  set(path: string, mode: GitFileMode, blobId: string): void {
    const segments = path.split('/');
    let dir = '';
    for (let i = 0; i < segments.length - 1; i++) {
      const child = dir === '' ? segments[i]! : `${dir}/${segments[i]}`;
      if (!this.dirs.has(child)) {
        this.dirs.set(child, { entries: new Map(), order: null });
        this.put(dir, segments[i]!, { mode: TREE_MODE, id: '' });
      }
      dir = child;
    }
    this.put(dir, segments[segments.length - 1]!, { mode, id: blobId });
    this.markDirty(dir);
  }

  /** The file at `path` (null: none, or a directory). */
  get(path: string): { mode: GitFileMode; id: string } | null {
    const cut = path.lastIndexOf('/');
    const entry = this.dirs.get(cut === -1 ? '' : path.slice(0, cut))?.entries.get(path.slice(cut + 1));
    return entry === undefined || entry.mode === TREE_MODE ? null : { mode: entry.mode as GitFileMode, id: entry.id };
  }

  /** Every file path, in no particular order. */
  paths(): string[] {
    const out: string[] = [];
    for (const [dir, { entries }] of this.dirs) {
      for (const [name, entry] of entries) if (entry.mode !== TREE_MODE) out.push(dir === '' ? name : `${dir}/${name}`);
    }
    return out;
  }

  delete(path: string): void {
    const cut = path.lastIndexOf('/');
    const dir = cut === -1 ? '' : path.slice(0, cut);
    if (this.remove(dir, path.slice(cut + 1))) this.markDirty(dir);
  }

  /** The root tree's id (and, as a side effect, every dirty subtree's). */
  rootId(): string {
    const order = [...this.dirty].sort((a, b) => depth(b) - depth(a));
    for (const dir of order) {
      const node = this.dirs.get(dir);
      if (node === undefined) continue;
      const cut = dir.lastIndexOf('/');
      const parent = cut === -1 ? '' : dir.slice(0, cut);
      const name = dir.slice(cut + 1);
      if (dir !== '' && node.entries.size === 0) {
        // git has no empty trees below the root: the directory disappears with its last file
        this.dirs.delete(dir);
        this.remove(parent, name);
        continue;
      }
      const id = treeId(node);
      if (dir === '') this.rootTree = id;
      else this.put(parent, name, { mode: TREE_MODE, id });
    }
    this.dirty.clear();
    return this.rootTree;
  }

  private put(dir: string, name: string, entry: TreeEntry): void {
    const node = this.dirs.get(dir)!;
    // A mode change between file and tree moves the name in git's order ('a' sorts as 'a/' when a tree).
    const before = node.entries.get(name);
    if (before === undefined || (before.mode === TREE_MODE) !== (entry.mode === TREE_MODE)) node.order = null;
    node.entries.set(name, entry);
  }

  private remove(dir: string, name: string): boolean {
    const node = this.dirs.get(dir);
    if (node === undefined || !node.entries.delete(name)) return false;
    node.order = null;
    return true;
  }

  private markDirty(dir: string): void {
    for (let d: string | null = dir; d !== null; d = d === '' ? null : d.includes('/') ? d.slice(0, d.lastIndexOf('/')) : '') {
      this.dirty.add(d);
    }
  }
}

function depth(dir: string): number {
  if (dir === '') return 0;
  let n = 1;
  for (let i = 0; i < dir.length; i++) if (dir.charCodeAt(i) === 47) n++;
  return n;
}

/** git sorts tree entries by name bytes, a subtree as if its name ended in '/'. */
function treeId(node: TreeDir): string {
  const { entries } = node;
  node.order ??= [...entries.keys()].sort((a, b) => compareUtf8(sortKey(a, entries.get(a)!), sortKey(b, entries.get(b)!)));
  const rows: Buffer[] = [];
  let size = 0;
  for (const name of node.order) {
    const entry = entries.get(name)!;
    entry.row ??= Buffer.concat([Buffer.from(`${entry.mode} ${name}\0`, 'utf8'), Buffer.from(entry.id, 'hex')]);
    rows.push(entry.row);
    size += entry.row.length;
  }
  return createHash('sha1').update(`tree ${size}\0`).update(Buffer.concat(rows, size)).digest('hex');
}

function sortKey(name: string, entry: TreeEntry): string {
  return entry.mode === TREE_MODE ? `${name}/` : name;
}
