// Disk blocks for SQLite's wal-index (the -shm file next to a WAL database), given before SQLite needs them.
//
// SQLite maps the -shm file and writes into the mapping. It grows the file by writing one byte at the
// end of each new 4 KiB page, which allocates the whole page only where a block is 4 KiB: on ext4 of
// 1 KiB blocks (mkfs's default below 512 MiB: a loop image, a small partition) three blocks of each page
// stay a hole, and SQLite's first store there (walIndexAppend's memset of a new hash table, at the first
// commit after a start) must allocate one. On a full disk the kernel answers that page fault with
// SIGBUS: the daemon died (exit 135, core in walIndexAppend) under a mount that a `tar x` was filling,
// and every tool in the directory then got "Transport endpoint is not connected". SQLite truncates the
// -shm file when the first connection of a start opens it, so this runs after that open.
//
// The blocks come from fallocate (the engine's addon, native/chunker/src/allocate.c), on SQLite's own
// descriptor of the file, found in /proc/self/fd: opening and closing a descriptor of our own would
// drop the fcntl locks SQLite holds on the file in this process.
import { fstatSync, readdirSync, readlinkSync, realpathSync, statfsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { constants } from 'node:os';
import type Database from 'better-sqlite3';
import { nativeChunkerPath } from '../datasets/gear-chunker.js';
import { StrataError } from '../errors.js';

/**
 * Reserved beyond what SQLite has mapped: the wal-index takes 32 KiB per 4,096 WAL frames, so 128 KiB
 * covers 16,384 more frames (64 MiB of WAL in 4 KiB pages, the pack's checkpoint interval). Only while
 * the disk has room to spare: on a nearly full disk, a 1 MiB reserve for one database left the next one
 * without the few blocks its own -shm file needs to open (SQLITE_IOERR_SHMSIZE: no daemon).
 */
export const WAL_INDEX_AHEAD = 128 * 1024;

/** Free space under which nothing is reserved ahead. */
const WAL_INDEX_SPARE = 8 * 1024 * 1024;

interface Allocator {
  allocate(fd: number, offset: number, length: number): number;
}

let allocator: Allocator | null | undefined;

/** The engine's addon's allocate (native/chunker/src/allocate.c), or null where it is not built. */
function loadAllocator(): Allocator | null {
  if (allocator !== undefined) return allocator;
  allocator = null;
  const path = nativeChunkerPath();
  if (path === null) return allocator;
  try {
    const addon = createRequire(import.meta.url)(path) as Partial<Allocator>;
    if (typeof addon.allocate === 'function') allocator = addon as Allocator;
  } catch {
    // an addon that does not load: SQLite runs as it did before
  }
  return allocator;
}

/** SQLite's descriptor of `file` in this process, or null when it has none open. */
function descriptorOf(file: string): number | null {
  let target: string;
  try {
    target = realpathSync(file);
  } catch {
    return null;
  }
  for (const name of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${name}`) === target) return Number(name);
    } catch {
      // closed meanwhile (the directory's own descriptor, another thread's file)
    }
  }
  return null;
}

/**
 * Gives the -shm file of the WAL database `dbPath` (open as `db`) its blocks: the part SQLite maps now, and
 * WAL_INDEX_AHEAD beyond it when there is room. Call it once a connection of this process has the
 * database open in WAL mode. Returns SQLite's descriptor of the -shm file (for keepWalIndexAhead while
 * that connection stays open), or null when there is nothing to do here. When the mapped part has holes
 * that the disk has no room left to fill, this throws DISK_FULL rather than let
 * the process die at its next commit.
 */
export function reserveWalIndex(db: Database.Database, dbPath: string): number | null {
  const native = loadAllocator();
  if (native === null) return null;
  // A read transaction maps the -shm file: `journal_mode = WAL` alone leaves it unopened when the
  // database is in WAL mode already, and the first commit would then map it without its blocks.
  db.pragma('user_version');
  const shm = `${dbPath}-shm`;
  const fd = descriptorOf(shm);
  if (fd === null) return null;
  const { size, blocks } = fstatSync(fd);
  // A file without holes (tmpfs, 4 KiB blocks) needs nothing; nor can anything be done here about one
  // on a filesystem without fallocate (EOPNOTSUPP).
  const errno = blocks * 512 >= size ? 0 : native.allocate(fd, 0, size);
  if (errno === constants.errno.ENOSPC || errno === constants.errno.EDQUOT) {
    throw new StrataError('DISK_FULL', {
      message: `The disk holding ${shm} is full: SQLite's shared-memory file could not be given its blocks (a write into it would crash the process); free space on that filesystem and start again`,
      details: { path: shm, code: errno === constants.errno.EDQUOT ? 'EDQUOT' : 'ENOSPC' },
    });
  }
  keepWalIndexAhead(fd);
  return fd;
}

/**
 * Blocks for the next WAL_INDEX_AHEAD of the -shm file behind `fd` (from reserveWalIndex), and for any
 * hole SQLite's growth left before it. Best effort: on a full disk SQLite's own growth (a write that
 * fails cleanly, SQLITE_IOERR_SHMSIZE) comes first anyway.
 */
export function keepWalIndexAhead(fd: number): void {
  const native = loadAllocator();
  if (native === null) return;
  try {
    // Not out of the last free blocks: the home's other databases need theirs to open at all.
    const { bavail, bsize } = statfsSync(`/proc/self/fd/${fd}`);
    if (bavail * bsize < WAL_INDEX_SPARE) return;
    native.allocate(fd, 0, fstatSync(fd).size + WAL_INDEX_AHEAD);
  } catch {
    // the descriptor is gone (the database was closed meanwhile)
  }
}
