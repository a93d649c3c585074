// The FUSE binding: Strata's own addon in native/fuse (libfuse3 low-level API, served on the JS thread;
// fuse-lowlevel.ts maps requests, fuse-inodes.ts keeps the inode table). It replaced fuse-native 2.2.6
// (libfuse2 high-level API): there every request crossed threads four times (~64 us of the ~79 us a
// request cost here) and libfuse added a getattr after every change; untar of 20,000 files ran at 0.29x
// bindfs (docs/mount.md "The FUSE binding").
// libfuse3 also lets the daemon invalidate what the kernel cached when the engine changes a path
// (restores, API writes), which libfuse2's high-level API could not.
//
// Loaded lazily with createRequire so a machine without libfuse3 (or without the built addon) gets
// FUSE_UNAVAILABLE (pointing to watch mode) instead of a crash at import time.
import { access, constants } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { StrataError } from '../../engine/errors.js';
import { LowLevelSession } from './fuse-lowlevel.js';
import { type NativeFuse, Op } from './fuse-native.js';
import type { FileTime } from './file-time.js';
import type { ContentMaps } from './mapped-reads.js';

export interface FuseStat {
  mode: number;
  uid: number;
  gid: number;
  size: number;
  nlink: number;
  blksize: number;
  blocks: number;
  /** to the nanosecond (file-time.ts; native/fuse makes timespecs of them) */
  atime: FileTime;
  mtime: FileTime;
  ctime: FileTime;
  ino?: number;
  dev?: number;
  rdev?: number;
  /**
   * A file's attributes (not a directory's): they change only through requests about the file, a
   * rename, or a change the mount hears of and drops them for (src/attrs.c). native/fuse may answer
   * getattr, and a chown or chmod that changes nothing, with them until then (at most 5 s).
   */
  cacheable?: boolean;
  /**
   * Set for a file with more than one name (hard links): every name that answers with the same key is
   * one inode for the kernel (fuse-inodes.ts), as link(2) promises.
   */
  link?: string;
}

export interface FuseStatfs {
  bsize: number;
  frsize: number;
  blocks: number;
  bfree: number;
  bavail: number;
  files: number;
  ffree: number;
  favail: number;
  fsid: number;
  flag: number;
  namemax: number;
}

/** A getxattr's or listxattr's answer: the bytes, or their length when the caller asked for it (size 0). */
export type XattrAnswer = { bytes: Buffer } | { length: number };

/** Every callback takes 0 or a negative errno first; read/write take a byte count (or negative errno). */
export type Done = (errno: number) => void;

/** Who asked for a new file, directory, node or link (the calling process's fsuid/fsgid): its owner. */
export interface Creator {
  uid: number;
  gid: number;
  /** its umask, for the mount to apply (the kernel leaves it to us when POSIX ACLs are on: attrs.ts created) */
  umask?: number;
}

export interface FuseOps {
  init?(cb: Done): void;
  statfs?(path: string, cb: (errno: number, stat?: FuseStatfs) => void): void;
  getattr(path: string, cb: (errno: number, stat?: FuseStat) => void): void;
  fgetattr?(path: string, fd: number, cb: (errno: number, stat?: FuseStat) => void): void;
  access?(path: string, mode: number, cb: Done): void;
  readdir(path: string, cb: (errno: number, names?: string[]) => void): void;
  open(path: string, flags: number, cb: (errno: number, fd?: number) => void): void;
  create(path: string, mode: number, cb: (errno: number, fd?: number) => void, creator?: Creator): void;
  read(path: string, fd: number, buf: Buffer, len: number, pos: number, cb: (bytesOrErrno: number) => void): void;
  write(path: string, fd: number, buf: Buffer, len: number, pos: number, cb: (bytesOrErrno: number) => void): void;
  /**
   * A write whose bytes are lent (the kernel request's own memory, valid only during this call): true
   * when they were taken (copied) before it returns, and `cb` answers later; false when the write
   * must wait for something first, and the caller copies them and calls `write`.
   */
  writeNow?(fd: number, buf: Buffer, len: number, pos: number, cb: (bytesOrErrno: number) => void): boolean;
  flush?(path: string, fd: number, cb: Done): void;
  release(path: string, fd: number, cb: Done): void;
  fsync?(path: string, datasync: number, fd: number, cb: Done): void;
  truncate?(path: string, size: number, cb: Done): void;
  ftruncate?(path: string, fd: number, size: number, cb: Done): void;
  unlink?(path: string, cb: Done): void;
  rename?(src: string, dest: string, cb: Done): void;
  link?(src: string, dest: string, cb: Done): void;
  /** Another name of the file at `path`, or null (synchronous): an unlink of an open file with one is no removal of the file. */
  otherName?(path: string): string | null;
  symlink?(target: string, path: string, cb: Done, creator?: Creator): void;
  readlink?(path: string, cb: (errno: number, target?: string) => void): void;
  mkdir?(path: string, mode: number, cb: Done, creator?: Creator): void;
  rmdir?(path: string, cb: Done): void;
  chmod?(path: string, mode: number, cb: Done): void;
  chown?(path: string, uid: number, gid: number, cb: Done): void;
  /** A time given as null is left as it is (a setattr that sets only the other one). */
  utimens?(path: string, atime: FileTime | null, mtime: FileTime | null, cb: Done): void;
  mknod?(path: string, mode: number, dev: number, cb: Done, creator?: Creator): void;
  /** `size` 0: the caller asks for the length only (answered as `length`) */
  getxattr?(path: string, name: string, size: number, cb: (errno: number, value?: XattrAnswer) => void): void;
  listxattr?(path: string, size: number, cb: (errno: number, value?: XattrAnswer) => void): void;
  setxattr?(path: string, name: string, value: Buffer, flags: number, cb: Done): void;
  /**
   * Whether a kept file may have file capabilities (security.capability) at mount time; until one is
   * set, the C side answers the kernel's question before each write without JS. Ignored files brought
   * in with capabilities by `--import` are not known to it (their capabilities are not dropped on write).
   */
  capsInUse?(): boolean;
  removexattr?(path: string, name: string, cb: Done): void;
  /**
   * Write-behind (native/fuse src/write_behind.c): may the C side keep the appended bytes and the times
   * of the file just created under handle `fd`? Only for a new, empty file in memory; null otherwise.
   */
  writeBehind?(fd: number): WriteBehind | null;
  /**
   * The bytes (the whole file, from offset 0) and times the C side kept for `fd`. Synchronous.
   * `journaled`: 0, or the bytes of the file's close record the C side wrote to the journal (it then
   * answered the close), or -errno when writing it failed. `perm`: the permission bits a chmod the C
   * side kept set (the exec bit unchanged), or -1. `atime` null: never set (it reads as the mtime).
   */
  absorb?(fd: number, data: Buffer, times: KeptTimes, journaled: number, perm: number): void;
}

/** The times write-behind kept for a new file (src/write_behind.c). */
export interface KeptTimes {
  atime: FileTime | null;
  mtime: FileTime;
  ctime: FileTime;
}

/** What the C side needs to journal a kept file's close itself (journalFd -1: the close goes to JS). */
export interface WriteBehind {
  journalFd: number;
  /** the file's journal record header (journal.ts) up to its size: `{"op":"w",...,"size":` */
  journalPrefix: string | null;
}

export interface MountOptions {
  /** libfuse mount options, joined into one `-o` string */
  options: string[];
  /** kernel attribute / name cache lifetimes (seconds) */
  attrTimeoutS: number;
  entryTimeoutS: number;
  /** directories' attributes (fuse-lowlevel.ts attrTimeout) */
  dirAttrTimeoutS: number;
  /** largest write request the kernel sends (bytes) */
  maxWrite: number;
  /** per-request safety timeout (ms): a request JS never answers fails with EIO then */
  opTimeoutMs: number;
  /** lazy unmount of the mount point (an argv-based child process, never a shell or a synchronous one) */
  unmount: (mnt: string) => Promise<void>;
}

export interface FuseMount {
  /** Tells the kernel to let go (lazy), then closes the session. */
  unmount(): Promise<void>;
  /**
   * Drops what the kernel cached about `path` ('a/b'): its attributes, pages and directory entry; with
   * `renumber`, its next lookup gets a new inode (handles open now keep the old one and its pages).
   */
  invalidate(path: string, renumber?: boolean): Promise<void>;
  /** The same for everything the kernel knows of the mount. */
  invalidateAll(): Promise<void>;
  /** Kernel requests received so far, by kind (Lookup, Getattr, ...). */
  requestCounts(): Record<string, number>;
  /** Handles whose reads native/fuse serves from stored content by itself (mapped-reads.ts). */
  contentMaps: ContentMaps;
}

/** The device the kernel side needs; STRATA_FUSE_DEVICE lets tests simulate a machine without FUSE. */
export function fuseDevicePath(): string {
  return process.env['STRATA_FUSE_DEVICE'] ?? '/dev/fuse';
}

function unavailable(reason: string, cause?: unknown): StrataError {
  return new StrataError('FUSE_UNAVAILABLE', {
    message: `FUSE is not available here (${reason}); use \`strata watch DIR\` to version a plain directory instead`,
    details: { reason },
    ...(cause === undefined ? {} : { cause }),
  });
}

const ADDON_FILE = 'native/fuse/build/Release/strata_fuse.node';

/** This module runs from the sources (under vitest) or from dist/: the repository root is two or three levels up. */
export function addonPath(): string {
  const require = createRequire(import.meta.url);
  for (const up of ['../../', '../../../']) {
    const candidate = fileURLToPath(new URL(up + ADDON_FILE, import.meta.url));
    try {
      return require.resolve(candidate);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw error;
    }
  }
  throw new Error(`${ADDON_FILE} is not built (scripts/env.sh builds it; it needs libfuse3-dev)`);
}

/** Loads the native binding or throws FUSE_UNAVAILABLE; checks the device first (cheaper, clearer message). */
export async function loadFuse(): Promise<NativeFuse> {
  const device = fuseDevicePath();
  try {
    await access(device, constants.R_OK | constants.W_OK);
  } catch (error) {
    throw unavailable(`${device} is missing or not accessible`, error);
  }
  try {
    return createRequire(import.meta.url)(addonPath()) as NativeFuse;
  } catch (error) {
    const detail = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw unavailable(`the FUSE binding or libfuse3 failed to load: ${detail}`, error);
  }
}

/** Mounts `ops` at `mnt`; the kernel's INIT and every later request are served on this thread. */
export async function mountFuse(native: NativeFuse, mnt: string, ops: FuseOps, options: MountOptions): Promise<FuseMount> {
  const session = new LowLevelSession(native, ops, options);
  try {
    session.mount(mnt, options.options.join(','));
  } catch (error) {
    throw unavailable(`mounting failed: ${error instanceof Error ? error.message : String(error)}`, error);
  }
  if (ops.init !== undefined) await new Promise<void>((resolve) => ops.init?.(() => resolve()));
  let unmounted: Promise<void> | null = null;
  return {
    unmount: () => {
      unmounted ??= options.unmount(mnt).finally(() => session.close());
      return unmounted;
    },
    invalidate: (path, renumber) => session.invalidate(path, renumber),
    invalidateAll: () => session.invalidateAll(),
    contentMaps: { map: (fh, table, size) => session.readMap(fh, table, size), unmap: (fh) => session.readUnmap(fh) },
    requestCounts: () => {
      const out: Record<string, number> = {};
      session.requests.forEach((n, op) => {
        if (n > 0) out[Op[op] ?? String(op)] = n;
      });
      const [getattr = 0, setattr = 0, writes = 0, times = 0, handovers = 0, flushes = 0, reads = 0] = session.answered();
      if (getattr > 0) out['Getattr (answered in C)'] = getattr;
      if (setattr > 0) out['Setattr (answered in C)'] = setattr;
      if (writes > 0) out['Write (kept in C)'] = writes;
      if (times > 0) out['Setattr of times (kept in C)'] = times;
      if (handovers > 0) out['Write-behind hand-overs to JS'] = handovers;
      if (flushes > 0) out['Flush (journaled in C)'] = flushes;
      if (reads > 0) out['Read (served in C)'] = reads;
      return out;
    },
  };
}
