// read, write, truncate, ftruncate.
import { writeSync } from 'node:fs';
import { ftruncateFd, readFd, writeFd } from './backing.js';
import { E, fail } from './errno.js';
import type { MountState } from './mount-state.js';
import { readNode, truncateNode, writeNode, writeNodeNow } from './node-content.js';
import { handleOf, noteReused } from './ops-open.js';

export async function read(state: MountState, fh: number, into: Buffer, len: number, pos: number): Promise<number> {
  const handle = handleOf(state, fh);
  if (handle.virtual !== null) return pos >= handle.virtual.length ? 0 : handle.virtual.copy(into, 0, pos, Math.min(handle.virtual.length, pos + len));
  if (handle.fd !== null) return readFd(handle.fd, into, len, pos);
  if (handle.node === null) fail(E.BADF);
  return readNode(state, handle, handle.node, into, len, pos);
}

export async function write(state: MountState, fh: number, data: Buffer, len: number, pos: number): Promise<number> {
  const handle = handleOf(state, fh);
  if (!handle.writable) fail(E.BADF);
  if (handle.fd !== null) return writeFd(handle.fd, data, len, pos);
  const node = handle.node;
  if (node === null) fail(E.BADF);
  handle.wrote = true;
  noteReused(handle);
  await writeNode(state, node, data, len, pos);
  return len;
}

/**
 * A small write to a file of the backing directory (an ignored name: a database's `-wal`, `.git/`)
 * is made here, from the lent bytes, instead of through libuv's thread pool: it lands in the page
 * cache in microseconds, and the pool's round trip cost ~100 µs of a SQLite commit's three writes.
 * Larger ones may wait for writeback, which must not stop the thread that serves the mount.
 */
const SYNC_WRITE_MAX = 64 * 1024;

function writeFdNow(fd: number, data: Buffer, len: number, pos: number): Promise<number> {
  try {
    return Promise.resolve(writeSync(fd, data, 0, len, pos));
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * `write` without waiting, for bytes that are only lent (fuse-lowlevel.ts): they are copied before
 * this returns, and the promise says when the tool may be answered. Null when the write has to wait
 * for something first (a node busy with a restore or a copy-on-write, a file on the backing
 * directory, memory content outgrowing its limit): the caller copies the bytes and calls `write`.
 */
export function writeNow(state: MountState, fh: number, data: Buffer, len: number, pos: number): Promise<number> | null {
  const handle = state.handles.get(fh);
  if (handle === undefined || !handle.writable) return null;
  if (handle.fd !== null) return len <= SYNC_WRITE_MAX ? writeFdNow(handle.fd, data, len, pos) : null;
  if (handle.node === null) return null;
  const room = writeNodeNow(state, handle.node, data, len, pos);
  if (room === null) return null;
  handle.wrote = true;
  noteReused(handle);
  return room.then(() => len);
}

export async function ftruncate(state: MountState, fh: number, size: number): Promise<void> {
  const handle = handleOf(state, fh);
  if (handle.fd !== null) return ftruncateFd(handle.fd, size);
  const node = handle.node;
  if (node === null) fail(E.BADF);
  handle.wrote = true;
  noteReused(handle);
  await truncateNode(state, node, size);
}

/** truncate(2) by path: a capture trigger of its own when nobody has the file open for writing. */
export async function truncate(state: MountState, path: string, size: number): Promise<void> {
  const resolved = await state.resolve(path);
  if (resolved === null) fail(E.NOENT);
  switch (resolved.kind) {
    case 'dir':
    case 'virtual-dir':
      fail(E.ISDIR);
      break;
    case 'virtual-file':
      fail(E.ACCES);
      break;
    case 'backing-file':
      return state.backing.truncate(path, size);
    case 'node':
    case 'entry': {
      const node = state.nodeFor(path, resolved);
      await truncateNode(state, node, size);
      if (node.writers === 0 && node.dirty) {
        state.reconciler.schedule(node.path);
        await state.logNode(node);
      } else state.dropIfIdle(node);
    }
  }
}
