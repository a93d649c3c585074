// chmod, utimens, chown, mknod, symbolic links (hard links: ops-links.ts). Only the owner's exec bit is part of a
// version (the engine's `executable`); the other mode bits and the owners are kept per path (attrs.ts),
// times in times.ts.
import { E, fail } from './errno.js';
import type { Creator } from './fuse-binding.js';
import { type MountState, type Resolved, VIRTUAL_DIR } from './mount-state.js';
import { contentForSmall } from './content-reader.js';
import { FileNode } from './file-node.js';
import { type FileTime, msTime } from './file-time.js';
import { placeNode } from './moves.js';
import { create, release } from './ops-open.js';
import { isWithin, parentOf } from './paths.js';

/** What a chmod or chown is about: a missing path is ENOENT, `.strata/` is read-only (EACCES). */
async function attrTarget(state: MountState, path: string): Promise<Exclude<Resolved, { kind: 'virtual-dir' | 'virtual-file' }>> {
  const resolved = await state.resolve(path);
  if (resolved === null) fail(E.NOENT);
  if (resolved.kind === 'virtual-dir' || resolved.kind === 'virtual-file') fail(E.ACCES);
  return resolved;
}

export async function chmod(state: MountState, path: string, mode: number): Promise<void> {
  const resolved = await attrTarget(state, path);
  switch (resolved.kind) {
    case 'dir':
      if (!resolved.versioned) await state.backing.chmod(path, mode);
      else {
        state.attrs.set(path, 'dir', false, { perm: mode });
        state.ns.setDirTimes(path, null, null, state.start); // ctime
      }
      return;
    case 'backing-file':
      return state.backing.chmod(path, mode);
    case 'node':
    case 'entry': {
      const node = state.nodeFor(path, resolved);
      const executable = (mode & 0o100) !== 0;
      node.ctime = msTime(state.now());
      state.attrs.set(path, 'file', executable, { perm: mode });
      setExecutable(state, node, executable);
    }
  }
}

/** A changed owner exec bit is a new version with the same content (`chmod +x`: a script becoming runnable matters). */
export function setExecutable(state: MountState, node: FileNode, executable: boolean): void {
  if (node.executable === executable) {
    state.dropIfIdle(node);
    return;
  }
  node.executable = executable;
  node.dirty = true;
  node.generation += 1;
  if (node.writers === 0) state.reconciler.schedule(node.path);
}

/** null keeps that time. A versioned file's times are kept (times.ts), not versioned. */
export async function utimens(state: MountState, path: string, atime: FileTime | null, mtime: FileTime | null): Promise<void> {
  const resolved = await state.resolve(path);
  if (resolved === null) fail(E.NOENT);
  switch (resolved.kind) {
    case 'virtual-dir':
    case 'virtual-file':
      return;
    case 'dir':
      if (!resolved.versioned) return state.backing.utimens(path, atime, mtime);
      state.ns.setDirTimes(path, atime, mtime, state.start);
      return;
    case 'backing-file':
      return state.backing.utimens(path, atime, mtime);
    case 'node':
      if (mtime !== null) resolved.node.mtime = mtime;
      if (atime !== null) resolved.node.atime = atime;
      resolved.node.ctime = msTime(state.now());
      return;
    case 'entry':
      // No local state needed: remember the times for this version (tar, rsync -t, make rely on them).
      state.touchEntry(path, resolved.entry, { mtime, atime });
  }
}

/** Owners are kept per path, not versioned; -1 keeps that id. */
export async function chown(state: MountState, path: string, uid: number, gid: number): Promise<void> {
  const resolved = await attrTarget(state, path);
  const change = { ...(uid === -1 ? {} : { uid }), ...(gid === -1 ? {} : { gid }) };
  switch (resolved.kind) {
    case 'dir':
      if (!resolved.versioned) await state.backing.chown(path, uid, gid);
      else {
        state.attrs.set(path, 'dir', false, change);
        state.ns.setDirTimes(path, null, null, state.start); // ctime
      }
      return;
    case 'backing-file':
      return state.backing.chown(path, uid, gid);
    case 'node':
      resolved.node.ctime = msTime(state.now());
      state.attrs.set(path, 'file', resolved.node.executable, change);
      return;
    case 'entry':
      state.attrs.set(path, 'file', resolved.entry.executable, change);
      state.touchEntry(path, resolved.entry);
  }
}

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;

/**
 * FIFOs, sockets (a bind(2) on the mount) and device nodes exist as on any filesystem, unversioned: they
 * live in the backing directory, and a versionable name gets a row that says so (attrs.ts markSpecial).
 * A regular file made with mknod is an empty new file, versioned like any other.
 */
export async function mknod(state: MountState, path: string, mode: number, dev: number, creator?: Creator): Promise<void> {
  if ((mode & S_IFMT) === S_IFREG || (mode & S_IFMT) === 0) {
    const fd = await create(state, path, mode & 0o7777, creator);
    return release(state, fd);
  }
  if ((await state.resolve(path)) !== null) fail(E.EXIST);
  if (isWithin(path, VIRTUAL_DIR)) fail(E.ACCES);
  const parent = await state.resolve(parentOf(path));
  if (parent === null) fail(E.NOENT);
  if (parent.kind !== 'dir') fail(E.NOTDIR);
  await state.backing.mknod(path, mode & ~(creator?.umask ?? 0), dev, creator === undefined ? undefined : { uid: creator.uid, gid: state.attrs.groupFor(path, creator) });
  if (parent.versioned && !state.backingCandidate(path)) {
    state.attrs.markSpecial(path, mode);
    state.ns.touchDir(parentOf(path));
  }
}

/**
 * A symbolic link at a versioned name is versioned as a link (the engine's `symlink`: its content is
 * the target); among ignored names it is a link in the backing directory. Never followed here: the
 * kernel resolves targets itself, and they may point anywhere.
 */
export async function symlink(state: MountState, target: string, path: string, creator?: Creator): Promise<void> {
  if ((await state.resolve(path)) !== null) fail(E.EXIST);
  if (isWithin(path, VIRTUAL_DIR)) fail(E.ACCES);
  const parent = await state.resolve(parentOf(path));
  if (parent === null) fail(E.NOENT);
  if (parent.kind !== 'dir') fail(E.NOTDIR);
  if (!parent.versioned || state.backingCandidate(path, false)) {
    await state.backing.symlink(target, path, creator === undefined ? undefined : { uid: creator.uid, gid: state.attrs.groupFor(path, creator) });
    state.noteIfUnversionable(path, parent.versioned);
    return;
  }
  const node = FileNode.link(path, Buffer.from(target), state.now());
  state.attrs.created(path, 'file', 0o644, creator === undefined ? undefined : { uid: creator.uid, gid: creator.gid });
  placeNode(state, node, path, null);
}

export async function readlink(state: MountState, path: string): Promise<string> {
  const resolved = await state.resolve(path);
  if (resolved === null) fail(E.NOENT);
  switch (resolved.kind) {
    case 'backing-file':
      if (!resolved.stat.isSymbolicLink()) fail(E.INVAL);
      return state.backing.readlink(path);
    case 'node': {
      const { node } = resolved;
      if (!node.symlink) fail(E.INVAL);
      await node.settled();
      if (node.content.kind === 'memory') return node.content.buf.subarray(0, node.size).toString();
      if (node.base === null) fail(E.INVAL);
      return Buffer.from(await contentForSmall(state.source, node.base)).toString();
    }
    case 'entry':
      if (!resolved.entry.symlink) fail(E.INVAL);
      return Buffer.from(await contentForSmall(state.source, { hash: resolved.entry.contentHash, size: resolved.entry.size, versionId: resolved.entry.versionId, dataset: false })).toString();
    default:
      return fail(E.INVAL);
  }
}
