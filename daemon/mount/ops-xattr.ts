// getxattr, setxattr, listxattr, removexattr (issue 39 item 4): `rsync -aHAX`, `tar --xattrs`, `cp -a`,
// provenance and checksum tools' `user.*` attributes, SELinux labels, and POSIX ACLs on group project
// directories (`setfacl -m g:lab:rwX`). A versioned file's or directory's attributes are kept with its
// mode and owners (attrs.ts); a file in the backing directory (an ignored name) keeps its own there.
// `.strata/` has none and takes none.
import { ACL_ACCESS } from './acl.js';
import { E, fail } from './errno.js';
import { msTime } from './file-time.js';
import type { XattrAnswer } from './fuse-binding.js';
import type { MountState, Resolved } from './mount-state.js';
import { setExecutable } from './ops-meta.js';

/** The kernel's limits (include/uapi/linux/limits.h): a value of at most 64 KiB, a name of at most 255 bytes. */
const XATTR_SIZE_MAX = 65536;
const XATTR_NAME_MAX = 255;
const XATTR_CREATE = 1;
const XATTR_REPLACE = 2;

type Target =
  | { kind: 'kept'; key: string; type: 'file' | 'dir'; executable: boolean; resolved: Resolved }
  | { kind: 'backing'; real: string }
  | { kind: 'virtual' };

async function targetOf(state: MountState, path: string): Promise<Target> {
  const resolved = await state.resolve(path);
  if (resolved === null) fail(E.NOENT);
  switch (resolved.kind) {
    case 'virtual-dir':
    case 'virtual-file':
      return { kind: 'virtual' };
    case 'backing-file':
      return { kind: 'backing', real: state.backing.real(path) };
    case 'dir':
      return resolved.versioned ? { kind: 'kept', key: path, type: 'dir', executable: false, resolved } : { kind: 'backing', real: state.backing.real(path) };
    case 'node':
      // A hard link's names are one file: its attributes are kept under its first name (link-groups.ts).
      return { kind: 'kept', key: state.links.primaryOf(path), type: 'file', executable: resolved.node.executable, resolved };
    case 'entry':
      return { kind: 'kept', key: state.links.primaryOf(path), type: 'file', executable: resolved.entry.executable, resolved };
  }
}

function answer(bytes: Buffer, size: number): XattrAnswer {
  if (size === 0) return { length: bytes.length };
  if (bytes.length > size) fail(E.RANGE);
  return { bytes };
}

function backingCall(result: number): number {
  if (result < 0) fail(result);
  return result;
}

/** A getxattr or listxattr of a backing file: `call` fills a buffer of the size asked for (0: the length only). */
function fromBacking(size: number, call: (into: Buffer) => number): XattrAnswer {
  const into = Buffer.allocUnsafe(size);
  const length = backingCall(call(into));
  if (size === 0) return { length };
  if (length > size) fail(E.RANGE);
  return { bytes: into.subarray(0, length) };
}

export async function getxattr(state: MountState, path: string, name: string, size: number): Promise<XattrAnswer> {
  const target = await targetOf(state, path);
  if (target.kind === 'virtual') fail(E.NODATA);
  if (target.kind === 'backing') return fromBacking(size, (into) => state.backing.xattrs.get(target.real, name, into));
  const value = state.attrs.xattr(target.key, name);
  if (value === undefined) fail(E.NODATA);
  return answer(value, size);
}

export async function listxattr(state: MountState, path: string, size: number): Promise<XattrAnswer> {
  const target = await targetOf(state, path);
  if (target.kind === 'virtual') return answer(Buffer.alloc(0), size);
  if (target.kind === 'backing') return fromBacking(size, (into) => state.backing.xattrs.list(target.real, into));
  const names = state.attrs.xattrNames(target.key);
  return answer(Buffer.from(names.map((name) => `${name}\0`).join('')), size);
}

export async function setxattr(state: MountState, path: string, name: string, value: Buffer, flags: number): Promise<void> {
  if (Buffer.byteLength(name) > XATTR_NAME_MAX || name.length === 0) fail(E.RANGE);
  if (value.length > XATTR_SIZE_MAX) fail(E.TOOBIG);
  const target = await targetOf(state, path);
  if (target.kind === 'virtual') fail(E.NOTSUP);
  if (target.kind === 'backing') {
    backingCall(state.backing.xattrs.set(target.real, name, value, flags));
    return;
  }
  const exists = state.attrs.xattr(target.key, name) !== undefined;
  if ((flags & XATTR_CREATE) !== 0 && exists) fail(E.EXIST);
  if ((flags & XATTR_REPLACE) !== 0 && !exists) fail(E.NODATA);
  keep(state, target, name, value);
}

export async function removexattr(state: MountState, path: string, name: string): Promise<void> {
  const target = await targetOf(state, path);
  if (target.kind === 'virtual') fail(E.NODATA);
  if (target.kind === 'backing') {
    backingCall(state.backing.xattrs.remove(target.real, name));
    return;
  }
  if (state.attrs.xattr(target.key, name) === undefined) fail(E.NODATA);
  keep(state, target, name, null);
}

/**
 * Keeps the attribute; an access ACL changes the mode with it (attrs.ts), and for a file, a changed
 * owner exec bit is a new version of it, as `chmod +x` is (ops-meta.ts chmod).
 */
function keep(state: MountState, target: Extract<Target, { kind: 'kept' }>, name: string, value: Buffer | null): void {
  const perm = state.attrs.setXattr(target.key, target.type, target.executable, name, value);
  if (perm < 0) fail(perm);
  if (target.type === 'dir') {
    state.ns.setDirTimes(target.key, null, null, state.start); // ctime
    return;
  }
  if (target.resolved.kind !== 'node' && target.resolved.kind !== 'entry') return;
  const node = state.nodeFor(target.key, target.resolved);
  node.ctime = msTime(state.now());
  setExecutable(state, node, name === ACL_ACCESS ? (perm & 0o100) !== 0 : node.executable);
}
