// open, create, flush, fsync, release: the life of a file handle. A handle that changed a versioned
// file schedules its capture when it is released (close); the capture itself waits for the settle
// delay (reconciler.ts) so an editor's rename-into-place lands first — unless the file is opened for
// writing again meanwhile: every close that changed content is a version.
import { ACL_ACCESS } from './acl.js';
import { closeFd, fsyncFd } from './backing.js';
import { E, fail, toErrno } from './errno.js';
import { FileNode, type Handle } from './file-node.js';
import type { Creator, KeptTimes, WriteBehind } from './fuse-binding.js';
import type { JournalRecord } from './journal.js';
import type { MountState } from './mount-state.js';
import { unmapHandle } from './mapped-reads.js';
import { truncateNode, writeNode } from './node-content.js';
import { isWithin, parentOf } from './paths.js';

const O_ACCMODE = 3;
const O_RDWR = 2;
const O_TRUNC = 0o1000;

export async function open(state: MountState, path: string, flags: number): Promise<number> {
  const resolved = await state.resolve(path);
  if (resolved === null) fail(E.NOENT);
  const writable = (flags & O_ACCMODE) !== 0;
  switch (resolved.kind) {
    case 'virtual-file':
      if (writable) fail(E.ACCES);
      return state.newHandle({ node: null, fd: null, writable: false, virtual: resolved.data }).id;
    case 'virtual-dir':
    case 'dir':
      fail(E.ISDIR);
      break;
    case 'backing-file': {
      const fd = await state.backing.open(path, flags);
      return state.newHandle({ node: null, fd, writable, virtual: null }).id;
    }
    case 'node':
    case 'entry': {
      // The kernel follows symbolic links and never opens one: an open that finds one here was for an
      // inode whose name now holds the link (a restore, a rename over it). Opened, the link took the
      // writes as its target: a 70 kB target, which readlink answered and every path through the link
      // then failed with ENAMETOOLONG (fsstress, four workers).
      if (resolved.kind === 'node' ? resolved.node.symlink : resolved.entry.symlink) fail(E.STALE);
      const node = state.nodeFor(path, resolved);
      // Counted before any await, so nothing drops the node from under this open.
      node.handles += 1;
      if (writable && node.dirty && !state.isHeldTemp(node.path) && (node.writers === 0 ? state.reconciler.hasTimer(node.path) : node.writers === node.closedWriters)) {
        // Every writer closed, and that content still waits out its settle delay (or its release):
        // it is a version of its own (`echo v1 > a.m; echo v2 > a.m` is two): set aside for its
        // capture (a small file), or captured before this handle changes it. A failed capture is
        // retried by the reconciler; the open goes on.
        if (!state.reconciler.freeze(node)) await state.reconciler.now(node.path, true).catch(() => undefined);
      }
      if (writable) node.writers += 1;
      const handle = state.newHandle({ node, fd: null, writable, virtual: null });
      if (writable && (flags & O_TRUNC) !== 0) {
        try {
          await truncateNode(state, node, 0);
        } catch (error) {
          await release(state, handle.id);
          throw error;
        }
        handle.wrote = true;
      }
      return handle.id;
    }
  }
  return fail(E.IO);
}

export async function create(state: MountState, path: string, mode: number, creator?: Creator): Promise<number> {
  const existing = await state.resolve(path);
  if (existing !== null) {
    if (existing.kind === 'dir' || existing.kind === 'virtual-dir') fail(E.ISDIR);
    return open(state, state.links.primaryOf(path), O_RDWR);
  }
  if (isWithin(path, '.strata')) fail(E.ACCES);
  const parent = await state.resolve(parentOf(path));
  if (parent === null) fail(E.NOENT);
  if (parent.kind !== 'dir') fail(E.NOTDIR);
  if (!parent.versioned || state.backingCandidate(path, false)) {
    const fd = await state.backing.create(path, mode & ~(creator?.umask ?? 0));
    await state.backing.giveTo(path, creator === undefined ? undefined : { uid: creator.uid, gid: state.attrs.groupFor(path, creator) });
    state.noteIfUnversionable(path, parent.versioned);
    return state.newHandle({ node: null, fd, writable: true, virtual: null }).id;
  }
  const { ns } = state;
  const node = new FileNode(path, null, state.now());
  node.content = { kind: 'memory', buf: Buffer.alloc(0) };
  node.executable = (state.attrs.created(path, 'file', mode, creator) & 0o100) !== 0;
  // A new empty file is a change too (`touch __init__.py` matters).
  node.dirty = true;
  node.handles = 1;
  node.writers = 1;
  // A removal still waiting here is moot: this file's capture replaces the engine's content.
  const marker = ns.gone.get(path);
  if (marker !== undefined && !marker.dir) ns.gone.delete(path);
  const displaced = ns.nodes.get(path);
  if (displaced !== undefined) state.detach(displaced);
  ns.nodes.set(path, node);
  ns.setEntry(path, 'file');
  const handle = state.newHandle({ node, fd: null, writable: true, virtual: null });
  handle.wrote = true;
  return handle.id;
}

/**
 * Write-behind (native/fuse src/write_behind.c): the C side may keep the bytes appended to a file and
 * its times, and hand them over before JS handles anything that could look at the file. Only a new
 * file qualifies: empty, in memory, open once, with nothing else running on it.
 */
export function writeBehind(state: MountState, fh: number): WriteBehind | null {
  const handle = state.handles.get(fh);
  const node = handle?.node;
  if (handle === undefined || node === null || node === undefined || !handle.writable) return null;
  // A file that got its directory's default ACL keeps its mode and ACL in step in JS (attrs.ts): the C
  // side's chmod would change the one without the other.
  const fresh = node.base === null && node.content.kind === 'memory' && node.size === 0 && node.handles === 1 && node.writers === 1 && node.busy === null && !node.detached && state.attrs.xattr(node.path, ACL_ACCESS) === undefined;
  if (!fresh) return null;
  // While the C side keeps the file, its path and exec bit stay as they are now (a rename or an exec
  // bit change is a request that hands the file back first), so its close record can be written there:
  // the record flush() -> logNode() would write, in journal.ts's format.
  const journalFd = state.journal.descriptor();
  return { journalFd, journalPrefix: journalFd < 0 ? null : closeRecordPrefix(node.path, node.executable) };
}

/** logNode's record for a small file, up to its size (JSON.stringify's output for the same object). */
export function closeRecordPrefix(path: string, executable: boolean): string {
  const record = JSON.stringify({ op: 'w', path, exec: executable, size: 0 } satisfies JournalRecord);
  return record.slice(0, -'0}'.length);
}

/**
 * What the C side kept for `fh`: the file's whole content from offset 0, and its times. `journaled`
 * > 0: it also journaled the file's close and answered it (what flush() does), -errno: that failed.
 */
export function absorb(state: MountState, fh: number, data: Buffer, times: KeptTimes, journaled: number, perm = -1): void {
  if (journaled > 0) state.journal.appendedElsewhere(journaled);
  else if (journaled < 0) state.journal.failedElsewhere(-journaled);
  const handle = state.handles.get(fh);
  const node = handle?.node;
  if (handle === undefined || node === null || node === undefined) return;
  handle.wrote = true;
  if (journaled > 0) noteClosed(handle);
  if (perm >= 0 && !node.detached) state.attrs.set(node.path, 'file', node.executable, { perm });
  const apply = () => {
    node.mtime = times.mtime;
    node.ctime = times.ctime;
    if (times.atime !== null) node.atime = times.atime;
    node.generation += 1;
    node.dirty = true;
  };
  if (node.busy === null && node.content.kind === 'memory' && node.size === 0) {
    node.content = { kind: 'memory', buf: data };
    node.size = data.length;
    apply();
    return;
  }
  // Something changed the node meanwhile without a request (it cannot be a write: those reach JS only
  // after this hand-over): the bytes go in as the write they were, in order with what follows.
  if (data.length > 0) void writeNode(state, node, data, data.length, 0).then(apply, (error: unknown) => state.logger.warn({ path: node.path, err: (error as Error).message }, 'mount: write-behind hand-over failed'));
  else apply();
}

export function handleOf(state: MountState, fh: number): Handle {
  const handle = state.handles.get(fh);
  if (handle === undefined) fail(E.BADF);
  return handle;
}

/**
 * close(2): deferred write failures surface here, like on NFS; and a file this handle changed is
 * journaled before close returns, so a crash before its capture loses nothing the tool saw closed.
 */
export async function flush(state: MountState, fh: number): Promise<void> {
  const handle = handleOf(state, fh);
  const node = handle.node;
  if (node === null) return;
  await node.settled();
  const content = node.content;
  if (content.kind === 'staged') await content.file.drain();
  if (handle.wrote && !(await state.logNode(node))) {
    // The journal cannot be written (a full disk), so a crash before the capture would lose bytes the
    // tool was told were closed: the file is versioned now, as fsync does, or the close fails (the
    // journal's errno, ENOSPC) and the tool knows. Answering it 0 lost ~200 files of a `tar x` into a
    // full home at the next kill -9.
    try {
      await state.reconciler.now(node.path, true);
    } catch (error) {
      fail(state.journal.errno ?? toErrno(error), `${node.path}: neither journaled nor versioned: ${(error as Error).message}`);
    }
  }
  noteClosed(handle);
}

/** The application closed `handle` (see FileNode.closedWriters). */
function noteClosed(handle: Handle): void {
  if (!handle.writable || handle.closed || handle.node === null) return;
  handle.closed = true;
  handle.node.closedWriters += 1;
}

/** A closed handle used again (a dup of its descriptor was still open): a writer like any other. */
export function noteReused(handle: Handle): void {
  if (!handle.closed || handle.node === null) return;
  handle.closed = false;
  handle.node.closedWriters -= 1;
}

/**
 * How long a change to a file held open for writing may go unversioned when the tool asks for
 * durability (watch mode's rule for a file written to for a long time: docs/daemon.md); above
 * OPEN_VERSION_LARGE_BYTES, each version hashes more, so they come less often.
 */
export const OPEN_VERSION_EVERY_MS = 2_000;
const OPEN_VERSION_LARGE_EVERY_MS = 60_000;
const OPEN_VERSION_LARGE_BYTES = 16 * 1024 * 1024;

/**
 * fsync(2) asks for durability, not for a version (issue 39 item 7): each one was a version of a
 * small file, so a database's 600 commits were 600 versions (and its `-wal` file's as many), at 2 ms
 * each. The bytes go to the mount's journal (a small file's, fdatasync'd) or stay in their staging
 * file (fsync'd, its record rewritten), which a restart after a crash versions; the version comes at
 * the close, as for any file. A file held open and changed for longer than OPEN_VERSION_EVERY_MS is
 * versioned at its next fsync all the same (a database open all day has versions during the day,
 * each taken right after the tool made its file consistent). If the journal cannot be written,
 * durability wins: the file is versioned now.
 */
export async function fsync(state: MountState, fh: number, datasync = false): Promise<void> {
  const handle = handleOf(state, fh);
  // A file of the backing directory: fdatasync(2) when the tool asked for it (SQLite does, at every commit).
  if (handle.fd !== null) return fsyncFd(handle.fd, datasync);
  const node = handle.node;
  if (node === null || node.detached) return;
  await node.settled();
  if (!node.dirty) return;
  const open = node.writers > node.closedWriters;
  const every = node.size > OPEN_VERSION_LARGE_BYTES ? OPEN_VERSION_LARGE_EVERY_MS : OPEN_VERSION_EVERY_MS;
  // A new temp file (write tmp; fsync; rename tmp target — Python's and most editors' safe save) is
  // never versioned here: its version would outlive the rename.
  const overdue = open && !state.isHeldTemp(node.path) && Date.now() - node.dirtySinceMs >= every;
  const content = node.content;
  if (content.kind === 'staged' && !overdue) {
    await content.file.fsync();
    // Still open for writing (this handle at least): what follows the fsync may be half written.
    await state.journalStaged(node, true, open);
    return;
  }
  if (content.kind === 'memory' && !overdue) {
    if ((await state.logNode(node, open)) && (await state.journal.sync().then(() => true, () => false))) return;
  }
  await state.reconciler.now(node.path, true);
}

export async function release(state: MountState, fh: number): Promise<void> {
  const handle = state.handles.get(fh);
  if (handle === undefined) return;
  state.handles.delete(fh);
  if (handle.fd !== null) {
    await closeFd(handle.fd);
    return;
  }
  const node = handle.node;
  if (node === null) return;
  await state.closeReader(handle);
  if (handle.closed) node.closedWriters -= 1;
  node.handles -= 1;
  unmapHandle(node, handle);
  if (handle.writable) node.writers -= 1;
  if (node.detached) {
    if (node.handles === 0) await state.discardContent(node);
    return;
  }
  if (node.dirty && node.writers === 0) state.reconciler.schedule(node.path);
  // The last writer of a node a restore superseded closed without writing: the restore shows now.
  else if (node.superseded && !node.dirty && node.writers === 0) state.onExternalChange(node.path);
  else state.dropIfIdle(node);
}
