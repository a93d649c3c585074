// Git object ids (SHA-1, git's default object format) of what the fast-import writer produces, computed
// without git: blob ids from content, tree ids from a tree kept up to date change by change, commit ids
// from tree, parent, identity and message. They let the server name its chain in git terms (refs, the
// parent a pushed stream must continue from) exactly as `git fast-import` of our export would.
import { createHash } from 'node:crypto';
import { StrataError } from '../errors.js';

export type GitFileMode = '100644' | '100755';
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
}

/**
 * A project tree in git terms, updated path by path. Only directories on the path of a change are
 * re-hashed, so following a chain of snapshots costs its changes, not files × snapshots.
 */
export class GitTree {
  private readonly dirs = new Map<string, Map<string, TreeEntry>>([['', new Map()]]);
  private readonly dirty = new Set<string>(['']);
  private rootTree = '';

  set(path: string, mode: GitFileMode, blobId: string): void {
    const segments = path.split('/');
    let dir = '';
    for (let i = 0; i < segments.length - 1; i++) {
      const child = dir === '' ? segments[i]! : `${dir}/${segments[i]}`;
      if (!this.dirs.has(child)) {
        this.dirs.set(child, new Map());
        this.dirs.get(dir)!.set(segments[i]!, { mode: TREE_MODE, id: '' });
      }
      dir = child;
    }
    this.dirs.get(dir)!.set(segments[segments.length - 1]!, { mode, id: blobId });
    this.markDirty(dir);
  }

  /** The file at `path` (null: none, or a directory). */
  get(path: string): { mode: GitFileMode; id: string } | null {
    const cut = path.lastIndexOf('/');
    const entry = this.dirs.get(cut === -1 ? '' : path.slice(0, cut))?.get(path.slice(cut + 1));
    return entry === undefined || entry.mode === TREE_MODE ? null : { mode: entry.mode as GitFileMode, id: entry.id };
  }

  /** Every file path, in no particular order. */
  paths(): string[] {
    const out: string[] = [];
    for (const [dir, entries] of this.dirs) {
      for (const [name, entry] of entries) if (entry.mode !== TREE_MODE) out.push(dir === '' ? name : `${dir}/${name}`);
    }
    return out;
  }

  delete(path: string): void {
    const cut = path.lastIndexOf('/');
    const dir = cut === -1 ? '' : path.slice(0, cut);
    const entries = this.dirs.get(dir);
    if (entries?.delete(path.slice(cut + 1))) this.markDirty(dir);
  }

  /** The root tree's id (and, as a side effect, every dirty subtree's). */
  rootId(): string {
    const order = [...this.dirty].sort((a, b) => depth(b) - depth(a));
    for (const dir of order) {
      const entries = this.dirs.get(dir);
      if (entries === undefined) continue;
      const cut = dir.lastIndexOf('/');
      const parent = cut === -1 ? '' : dir.slice(0, cut);
      const name = dir.slice(cut + 1);
      if (dir !== '' && entries.size === 0) {
        // git has no empty trees below the root: the directory disappears with its last file
        this.dirs.delete(dir);
        this.dirs.get(parent)?.delete(name);
        continue;
      }
      const id = treeId(entries);
      if (dir === '') this.rootTree = id;
      else this.dirs.get(parent)!.set(name, { mode: TREE_MODE, id });
    }
    this.dirty.clear();
    return this.rootTree;
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
function treeId(entries: Map<string, TreeEntry>): string {
  const rows = [...entries].map(([name, entry]) => ({ key: Buffer.from(entry.mode === TREE_MODE ? `${name}/` : name, 'utf8'), name, entry }));
  rows.sort((a, b) => Buffer.compare(a.key, b.key));
  const parts: Buffer[] = [];
  for (const { name, entry } of rows) {
    parts.push(Buffer.from(`${entry.mode} ${name}\0`, 'utf8'), Buffer.from(entry.id, 'hex'));
  }
  const body = Buffer.concat(parts);
  return createHash('sha1').update(`tree ${body.length}\0`).update(body).digest('hex');
}
