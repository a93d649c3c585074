// getattr, readdir, statfs, access: answered from local state and the engine's current entries;
// nothing here writes.
import { statfs as statfsCall } from 'node:fs/promises';
import { toFuseStat } from './backing.js';
import { E, fail } from './errno.js';
import type { FileNode } from './file-node.js';
import { msTime } from './file-time.js';
import type { FuseStat, FuseStatfs } from './fuse-binding.js';
import { type MountState, VIRTUAL_DIR, VIRTUAL_FILE, VIRTUAL_GITIGNORE } from './mount-state.js';
import { baseName, isFuseHidden } from './paths.js';

export async function getattr(state: MountState, path: string): Promise<FuseStat> {
  const resolved = await state.resolve(path);
  if (resolved === null) fail(E.NOENT);
  switch (resolved.kind) {
    case 'dir': {
      // A directory changes through requests about it (or a rename into it, a change behind the
      // mount: both drop what native/fuse keeps), so native/fuse may answer for it meanwhile.
      if (resolved.versioned) return { ...(await state.versionedDirStat(path)), cacheable: true };
      // Only in the backing directory: what that filesystem says (modes, owners, times, links).
      const stat = await state.backing.stat(path);
      if (stat === null) fail(E.NOENT);
      return { ...toFuseStat(stat), cacheable: true };
    }
    case 'virtual-dir':
      return state.dirStat(false);
    case 'virtual-file':
      return { ...state.fileStat(resolved.data.length, false, msTime(state.now())), mode: 0o100444 };
    case 'node': {
      const { node } = resolved;
      const stat = state.fileStat(node.size, node.executable, node.mtime, node.ctime, state.attrs.of(path, 'file', node.executable), node.atime);
      stat.blocks = await blocksOf(state, node);
      // native/fuse may answer with these until a request about this file reaches JS (src/attrs.c).
      if (!node.detached) stat.cacheable = true;
      if (node.symlink) stat.mode = S_IFLNK | 0o777;
      countNames(state, path, stat);
      // Removed while open (kept as `.fuse_hidden*` until its last close): no name links to it.
      if (node.detached || isFuseHidden(path)) stat.nlink = 0;
      return stat;
    }
    case 'entry': {
      const { entry } = resolved;
      const times = state.timesOf(path, entry);
      const stat = state.fileStat(entry.size, entry.executable, times.mtime, times.ctime, state.attrs.of(path, 'file', entry.executable), times.atime);
      stat.blocks = state.sparse.of(entry.contentHash, entry.size);
      if (entry.symlink) stat.mode = S_IFLNK | 0o777;
      stat.cacheable = true;
      countNames(state, path, stat);
      return stat;
    }
    case 'backing-file': {
      const stat = toFuseStat(resolved.stat);
      // Hard links among FIFOs, sockets, device nodes and ignored files are the backing filesystem's.
      if (resolved.stat.nlink > 1n) stat.link = `b${resolved.stat.ino}`;
      return stat;
    }
  }
}

/**
 * getattr through an open handle (fstat, and the kernel's checks before a read). A handle whose file
 * left the tree while it was open (a restore over it) reads that file's bytes: it answers with their
 * size and times, not with what the path names now — else a reader got the old bytes cut at the
 * restored size.
 */
export async function fgetattr(state: MountState, path: string, fh: number): Promise<FuseStat> {
  const node = state.handles.get(fh)?.node;
  if (node === null || node === undefined || !node.detached) return getattr(state, path);
  const stat = state.fileStat(node.size, node.executable, node.mtime, node.ctime, state.attrs.of(path, 'file', node.executable), node.atime);
  if (node.symlink) stat.mode = S_IFLNK | 0o777;
  stat.nlink = 0;
  return stat;
}

/**
 * What a file's bytes take (st_blocks): a file being written, its staging file's (holes stay holes
 * there); an unchanged one, its content's (sparse.ts); one in memory, its size's.
 */
async function blocksOf(state: MountState, node: FileNode): Promise<number> {
  const content = node.content;
  if (content.kind === 'staged') return (await content.file.allocated()) ?? Math.ceil(node.size / 512);
  if (content.kind === 'base') return state.sparse.of(node.base?.hash, node.size);
  return Math.ceil(node.size / 512);
}

/** A hard-linked versioned file: nlink counts its names, and the binding gives them one inode. */
function countNames(state: MountState, path: string, stat: FuseStat): void {
  if (state.links.empty) return;
  const group = state.links.groupId(path);
  if (group === undefined) return;
  stat.nlink = state.links.namesOf(path).length;
  stat.link = `g${group}`;
}

export async function readdir(state: MountState, path: string): Promise<string[]> {
  const resolved = await state.resolve(path);
  if (resolved === null) fail(E.NOENT);
  if (resolved.kind === 'virtual-dir') return ['.', '..', baseName(VIRTUAL_FILE), baseName(VIRTUAL_GITIGNORE)];
  if (resolved.kind !== 'dir') fail(E.NOTDIR);
  const names = new Set<string>();
  if (resolved.versioned) for (const name of (await state.ns.listing(path)).keys()) names.add(name);
  for (const name of await state.backing.readdir(path)) names.add(name);
  if (path === '') names.add(VIRTUAL_DIR);
  // In one order for the same names: the kernel may read a listing's start from its cache and the
  // rest from a listing made for another open of the directory (fuse-lowlevel.ts, Opendir).
  return ['.', '..', ...[...names].sort()];
}

/** The filesystem the home lives on: what the mount's content really consumes. */
export async function statfs(state: MountState): Promise<FuseStatfs> {
  const s = await statfsCall(state.backing.root);
  return {
    bsize: s.bsize,
    frsize: s.bsize,
    blocks: s.blocks,
    bfree: s.bfree,
    bavail: s.bavail,
    files: s.files,
    ffree: s.ffree,
    favail: s.ffree,
    fsid: 0,
    flag: 0,
    namemax: 255,
  };
}

const W_OK = 2;
const S_IFLNK = 0o120000;

export async function access(state: MountState, path: string, mode: number): Promise<void> {
  const resolved = await state.resolve(path);
  if (resolved === null) fail(E.NOENT);
  if ((mode & W_OK) !== 0 && (resolved.kind === 'virtual-dir' || resolved.kind === 'virtual-file')) fail(E.ACCES);
}
