// Unversioned files of the mount: ignored paths (`.git/`, swap files, `__pycache__/`, `.strataignore`
// patterns) and names the engine cannot store. They must still behave like files — git clones into the
// mount, editors keep swap files — so they live in a plain directory under the Strata home and every
// operation on them is a passthrough. Keeping `.git/` out of the engine is the point of ignoring it:
// a clone's thousands of lock/rename dances would otherwise each be a version.
import * as fsc from 'node:fs';
import { type BigIntStats, constants } from 'node:fs';
import * as fs from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fail } from './errno.js';
import { type FileTime, nsTime } from './file-time.js';
import type { FuseStat } from './fuse-binding.js';

export const BLOCK_SIZE = 128 * 1024;

/** A bigint lstat: Stats' *Ms are doubles, a few hundred nanoseconds off (file-time.ts). */
export function toFuseStat(s: BigIntStats): FuseStat {
  return {
    mode: Number(s.mode),
    uid: Number(s.uid),
    gid: Number(s.gid),
    size: Number(s.size),
    nlink: Number(s.nlink),
    blksize: BLOCK_SIZE,
    blocks: Number(s.blocks),
    atime: nsTime(s.atimeNs),
    mtime: nsTime(s.mtimeNs),
    ctime: nsTime(s.ctimeNs),
    rdev: Number(s.rdev),
  };
}

/** xattr calls on a real file of the backing directory (native/fuse src/xattrs.c): lengths, 0, or -errno. */
export interface BackingXattrs {
  get(real: string, name: string, into: Buffer): number;
  list(real: string, into: Buffer): number;
  set(real: string, name: string, value: Buffer, flags: number): number;
  remove(real: string, name: string): number;
}

const NOT_SUPPORTED = -95;
const NO_XATTRS: BackingXattrs = { get: () => NOT_SUPPORTED, list: () => NOT_SUPPORTED, set: () => NOT_SUPPORTED, remove: () => NOT_SUPPORTED };

export class Backing {
  /** temp names handed out (tempPath) */
  #temps = 0;

  constructor(
    readonly root: string,
    /** mknod(2) (native/fuse; Node has none): 0 or the errno */
    private readonly makeNode: (real: string, mode: number, dev: number) => number = () => 38,
    /** xattr calls on its files (native/fuse; Node has none) */
    readonly xattrs: BackingXattrs = NO_XATTRS,
    /**
     * utimensat(2) on a real path to the nanosecond, never through a link (native/fuse lutimens; Node's
     * utimes is neither): 0 or the errno. An in-place mount's write-back sets its files' times with it.
     */
    readonly setTimes: (real: string, atime: FileTime | null, mtime: FileTime | null) => number = () => 38,
  ) {}

  /** A FIFO, socket or device node; owned by `owner` when the daemon may give it away (root). */
  async mknod(path: string, mode: number, dev: number, owner?: { uid: number; gid: number }): Promise<void> {
    await this.ensureParent(path);
    const errno = this.makeNode(this.real(path), mode, dev);
    if (errno !== 0) fail(-errno);
    await this.giveTo(path, owner);
  }

  async symlink(target: string, path: string, owner?: { uid: number; gid: number }): Promise<void> {
    await this.ensureParent(path);
    await fs.symlink(target, this.real(path));
    await this.giveTo(path, owner);
  }

  readlink(path: string): Promise<string> {
    return fs.readlink(this.real(path));
  }

  /** New entries are the daemon's; as root it hands them to the user who created them. */
  async giveTo(path: string, owner?: { uid: number; gid: number }): Promise<void> {
    if (owner === undefined || process.getuid?.() !== 0 || (owner.uid === 0 && owner.gid === 0)) return;
    await fs.lchown(this.real(path), owner.uid, owner.gid);
  }

  real(path: string): string {
    return path === '' ? this.root : join(this.root, path);
  }

  /** bigint: the times to the nanosecond (measured: ~1 us more than a plain lstat's ~25 us) */
  async stat(path: string): Promise<BigIntStats | null> {
    try {
      return await fs.lstat(this.real(path), { bigint: true });
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  async readdir(dir: string): Promise<string[]> {
    try {
      return await fs.readdir(this.real(dir));
    } catch (error) {
      if (isMissing(error)) return [];
      throw error;
    }
  }

  /** The directory at `dir` holds nothing but directories (or is not here): no unversioned data below it. */
  async onlyDirsBelow(dir: string): Promise<boolean> {
    return (await this.fileBelow(dir)) === null;
  }

  /**
   * The first thing below the directory at `dir` that is not a directory (a path in the project), or
   * null when there is none (or no directory here). A file of its own at `dir` is data too: `dir`.
   */
  async fileBelow(dir: string): Promise<string | null> {
    let entries: import('node:fs').Dirent[];
    try {
      entries = await fs.readdir(this.real(dir), { withFileTypes: true });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return null;
      if (code === 'ENOTDIR') return dir;
      throw error;
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      const found = entry.isDirectory() ? await this.fileBelow(path) : path;
      if (found !== null) return found;
    }
    return null;
  }

  /**
   * Names of the subdirectories the backing directory has at `dir` (none when it has no such
   * directory): a versioned directory's nlink counts them. Remembered until the mount creates, removes
   * or renames something that could change them (only the mount writes here): a directory's getattr
   * asked the filesystem each time, and an untar's 3,000 directory getattrs cost ~10% of its time.
   */
  async subdirNames(dir: string): Promise<string[]> {
    const known = this.#subdirs.get(dir);
    if (known !== undefined) return known;
    const generation = this.#generation;
    let names: string[];
    try {
      names = (await fs.readdir(this.real(dir), { withFileTypes: true })).filter((entry) => entry.isDirectory()).map((entry) => entry.name);
    } catch (error) {
      if (!isMissing(error)) throw error;
      names = [];
    }
    // A change while the directory was read may not be in what was read: not remembered then.
    if (generation === this.#generation) this.#subdirs.set(dir, names);
    return names;
  }

  readonly #subdirs = new Map<string, string[]>();
  #generation = 0;

  #forgetSubdirs(): void {
    this.#subdirs.clear();
    this.#generation++;
  }

  /**
   * A fresh name on the backing directory's filesystem that the mount never shows (below `.strata`,
   * the mount's own), for an entry built first and then renamed over its path (replaceWith): a tool
   * never sees it half made, and whatever was at the path is replaced in one step (rename(2)), never
   * removed first. What a crash left there is cleared the first time this process needs one.
   */
  async tempPath(): Promise<string> {
    const dir = join(this.root, '.strata', 'mount-incoming');
    if (this.#temps === 0) await fs.rm(dir, { recursive: true, force: true });
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    return join(dir, `${process.pid}-${++this.#temps}`);
  }

  /** Renames the entry built at `temp` (tempPath) over `path`. */
  async replaceWith(temp: string, path: string): Promise<void> {
    await this.ensureParent(path);
    await fs.rename(temp, this.real(path));
  }

  /** Creates the parents a backing entry needs below a versioned directory. */
  async ensureParent(path: string): Promise<void> {
    if ((await fs.mkdir(dirname(this.real(path)), { recursive: true })) !== undefined) this.#forgetSubdirs();
  }

  async create(path: string, mode: number): Promise<number> {
    await this.ensureParent(path);
    return openFd(this.real(path), constants.O_RDWR | constants.O_CREAT | constants.O_TRUNC, mode & 0o7777);
  }

  async open(path: string, flags: number): Promise<number> {
    // Readable even for O_WRONLY opens (the kernel may read pages for partial writes); no O_APPEND: the
    // kernel already turns appends into writes at the end, with the offset it passes us.
    const access = (flags & 3) === constants.O_RDONLY ? constants.O_RDONLY : constants.O_RDWR;
    return openFd(this.real(path), access | (flags & constants.O_TRUNC), 0o666);
  }

  async mkdir(path: string, mode: number): Promise<void> {
    await this.ensureParent(path);
    this.#forgetSubdirs();
    await fs.mkdir(this.real(path), { mode: mode & 0o7777 });
  }

  rmdir(path: string): Promise<void> {
    this.#forgetSubdirs();
    return fs.rmdir(this.real(path));
  }

  unlink(path: string): Promise<void> {
    return fs.unlink(this.real(path));
  }

  /** A hard link: the backing filesystem keeps the inode, its modes and nlink for both names. */
  async link(from: string, to: string): Promise<void> {
    await this.ensureParent(to);
    await fs.link(this.real(from), this.real(to));
  }

  async rename(from: string, to: string): Promise<void> {
    await this.ensureParent(to);
    this.#forgetSubdirs();
    await fs.rename(this.real(from), this.real(to));
  }

  chmod(path: string, mode: number): Promise<void> {
    return fs.chmod(this.real(path), mode & 0o7777);
  }

  /** -1 keeps that id (as chown(2) does). */
  chown(path: string, uid: number, gid: number): Promise<void> {
    return fs.lchown(this.real(path), uid, gid);
  }

  /** null leaves that time as it is. */
  async utimens(path: string, atime: FileTime | null, mtime: FileTime | null): Promise<void> {
    const errno = this.setTimes(this.real(path), atime, mtime);
    if (errno !== 0) fail(-errno);
  }

  truncate(path: string, size: number): Promise<void> {
    return fs.truncate(this.real(path), size);
  }
}

export function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

// Raw descriptors, not FileHandle objects: a FileHandle that is garbage-collected closes its descriptor
// behind our back, and these live in the handle table for as long as the kernel keeps the file open.
function openFd(path: string, flags: number, mode: number): Promise<number> {
  return new Promise((resolve, reject) => fsc.open(path, flags, mode, (error, fd) => (error ? reject(error) : resolve(fd))));
}

export function readFd(fd: number, into: Buffer, len: number, pos: number): Promise<number> {
  return new Promise((resolve, reject) => fsc.read(fd, into, 0, len, pos, (error, n) => (error ? reject(error) : resolve(n))));
}

export function writeFd(fd: number, data: Buffer, len: number, pos: number): Promise<number> {
  return new Promise((resolve, reject) => fsc.write(fd, data, 0, len, pos, (error, n) => (error ? reject(error) : resolve(n))));
}

export function fsyncFd(fd: number, datasync = false): Promise<void> {
  const done = (resolve: () => void, reject: (error: Error) => void) => (error: Error | null) => (error ? reject(error) : resolve());
  return new Promise((resolve, reject) => (datasync ? fsc.fdatasync(fd, done(resolve, reject)) : fsc.fsync(fd, done(resolve, reject))));
}

export function ftruncateFd(fd: number, size: number): Promise<void> {
  return new Promise((resolve, reject) => fsc.ftruncate(fd, size, (error) => (error ? reject(error) : resolve())));
}

export function closeFd(fd: number): Promise<void> {
  return new Promise((resolve) => fsc.close(fd, () => resolve()));
}
