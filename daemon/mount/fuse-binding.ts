// The FUSE binding: fuse-native 2.2.6 (N-API prebuild, links Debian's libfuse.so.2). Why this one and
// not a fork (measured here, Node 24.21, details in README "Mount mode"): @cocalc/fuse-native 2.4.3 has
// the same C code but compiles at install (needs libfuse-dev + a toolchain); @gcas/fuse 2.4.2 does not
// load (its index.js requires the undeclared `bindings` package). All three pass libfuse options through
// one `-o` string, which is how we get what the JS wrapper does not expose (big_writes, max_write,
// atomic_o_trunc, negative_timeout).
//
// Loaded lazily with createRequire so a machine without libfuse2 gets FUSE_UNAVAILABLE (pointing to
// watch mode) instead of a crash at import time.
import { access, constants } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { StrataError } from '../../engine/errors.js';

/** Times are milliseconds since the epoch (fuse-native converts numbers as-is). */
export interface FuseStat {
  mode: number;
  uid: number;
  gid: number;
  size: number;
  nlink: number;
  blksize: number;
  blocks: number;
  atime: number;
  mtime: number;
  ctime: number;
  ino?: number;
  dev?: number;
  rdev?: number;
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

/** Every callback takes 0 or a negative errno first; read/write take a byte count (or negative errno). */
export type Done = (errno: number) => void;

export interface FuseOps {
  init?(cb: Done): void;
  statfs?(path: string, cb: (errno: number, stat?: FuseStatfs) => void): void;
  getattr(path: string, cb: (errno: number, stat?: FuseStat) => void): void;
  fgetattr?(path: string, fd: number, cb: (errno: number, stat?: FuseStat) => void): void;
  access?(path: string, mode: number, cb: Done): void;
  readdir(path: string, cb: (errno: number, names?: string[]) => void): void;
  open(path: string, flags: number, cb: (errno: number, fd?: number) => void): void;
  create(path: string, mode: number, cb: (errno: number, fd?: number) => void): void;
  read(path: string, fd: number, buf: Buffer, len: number, pos: number, cb: (bytesOrErrno: number) => void): void;
  write(path: string, fd: number, buf: Buffer, len: number, pos: number, cb: (bytesOrErrno: number) => void): void;
  flush?(path: string, fd: number, cb: Done): void;
  release(path: string, fd: number, cb: Done): void;
  fsync?(path: string, datasync: number, fd: number, cb: Done): void;
  truncate?(path: string, size: number, cb: Done): void;
  ftruncate?(path: string, fd: number, size: number, cb: Done): void;
  unlink?(path: string, cb: Done): void;
  rename?(src: string, dest: string, cb: Done): void;
  link?(src: string, dest: string, cb: Done): void;
  symlink?(target: string, path: string, cb: Done): void;
  readlink?(path: string, cb: (errno: number, target?: string) => void): void;
  mkdir?(path: string, mode: number, cb: Done): void;
  rmdir?(path: string, cb: Done): void;
  chmod?(path: string, mode: number, cb: Done): void;
  chown?(path: string, uid: number, gid: number, cb: Done): void;
  utimens?(path: string, atime: number, mtime: number, cb: Done): void;
  mknod?(path: string, mode: number, dev: number, cb: Done): void;
}

interface FuseInstance {
  mount(cb: (error: Error | null) => void): void;
  unmount(cb: (error: Error | null) => void): void;
  _fuseOptions(): string;
}

interface FuseClass {
  new (mnt: string, ops: FuseOps, opts: Record<string, unknown>): FuseInstance;
  unmount(mnt: string, cb: (error: Error | null) => void): void;
}

export interface MountOptions {
  /** libfuse options, joined into one `-o` string */
  options: string[];
  /** per-operation safety timeout of the binding (ms); an op that never answers fails with EIO then */
  opTimeoutMs: number;
  /** how the binding unmounts (it would otherwise shell out through `exec`, unsafe for odd paths) */
  unmount: (mnt: string) => Promise<void>;
}

export interface FuseMount {
  /** Tells the kernel to let go (lazy), then frees the binding's thread. */
  unmount(): Promise<void>;
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

/** Loads fuse-native or throws FUSE_UNAVAILABLE; checks the device first (cheaper, clearer message). */
export async function loadFuse(): Promise<FuseClass> {
  const device = fuseDevicePath();
  try {
    await access(device, constants.R_OK | constants.W_OK);
  } catch (error) {
    throw unavailable(`${device} is missing or not accessible`, error);
  }
  try {
    return createRequire(import.meta.url)('fuse-native') as FuseClass;
  } catch (error) {
    const detail = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw unavailable(`the fuse-native binding or libfuse2 failed to load: ${detail}`, error);
  }
}

/** Mounts `ops` at `mnt`; resolves once the kernel sent INIT (the mount is serving). */
export async function mountFuse(Fuse: FuseClass, mnt: string, ops: FuseOps, options: MountOptions): Promise<FuseMount> {
  // The binding's own unmount runs `exec("fusermount -uz " + JSON.stringify(mnt))` through a shell;
  // replace it (it is also what its close() calls) with an argv-based spawn.
  Fuse.unmount = (target, cb) => {
    options.unmount(target).then(
      () => cb(null),
      (error: unknown) => cb(error instanceof Error ? error : new Error(String(error))),
    );
  };
  const fuse = new Fuse(mnt, ops, { timeout: options.opTimeoutMs });
  const extra = options.options.join(',');
  fuse._fuseOptions = () => (extra === '' ? '' : `-o${extra}`);
  await new Promise<void>((resolve, reject) => {
    fuse.mount((error) => {
      if (error) reject(unavailable(`mounting failed: ${error.message}`, error));
      else resolve();
    });
  });
  let unmounted: Promise<void> | null = null;
  return {
    unmount: () => {
      unmounted ??= new Promise<void>((resolve, reject) => {
        fuse.unmount((error) => (error ? reject(error) : resolve()));
      });
      return unmounted;
    },
  };
}
