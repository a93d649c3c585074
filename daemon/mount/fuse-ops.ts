// The operation table handed to the binding: each FUSE callback runs one async operation and answers
// with 0 / a byte count / a negative errno. Unexpected failures are logged (expected refusals such as
// ENOENT are not) and answered with EIO, never left unanswered.
import { FsError, toErrno } from './errno.js';
import type { FuseOps } from './fuse-binding.js';
import type { MountState } from './mount-state.js';
import { NamespaceLock } from './namespace-lock.js';
import { access, fgetattr, getattr, readdir, statfs } from './ops-attr.js';
import { mkdir, rmdir } from './ops-dirs.js';
import { ftruncate, read, truncate, write, writeNow } from './ops-io.js';
import { chmod, chown, mknod, readlink, symlink, utimens } from './ops-meta.js';
import { link } from './ops-links.js';
import { rename, unlink } from './ops-names.js';
import { absorb, create, flush, fsync, open, release, writeBehind } from './ops-open.js';
import { getxattr, listxattr, removexattr, setxattr } from './ops-xattr.js';
import { fromFuse } from './paths.js';

/** Per-operation counts and time spent answering (ms): `strata status` / benchmarks show where time goes. */
export type OpStats = Map<string, { count: number; ms: number }>;

export function buildFuseOps(state: MountState, stats: OpStats = new Map()): FuseOps {
  const note = (op: string, started: number) => {
    state.noteOp(state.now());
    let entry = stats.get(op);
    if (entry === undefined) {
      entry = { count: 0, ms: 0 };
      stats.set(op, entry);
    }
    entry.count += 1;
    entry.ms += performance.now() - started;
  };
  const report = (op: string, path: string, error: unknown): number => {
    const errno = toErrno(error);
    if (!(error instanceof FsError)) state.logger.warn({ op, path, errno, err: error instanceof Error ? error.message : String(error) }, 'mount operation failed');
    return errno;
  };
  /** For callbacks of the form cb(errno, value?). */
  function run<T>(op: string, path: string, work: () => Promise<T>, cb: (errno: number, value?: T) => void): void {
    const started = performance.now();
    work().then(
      (value) => {
        note(op, started);
        cb(0, value);
      },
      (error: unknown) => {
        note(op, started);
        cb(report(op, path, error));
      },
    );
  }
  /** For read/write: cb(bytes) or cb(-errno). */
  function runCount(op: string, path: string, work: () => Promise<number>, cb: (n: number) => void): void {
    const started = performance.now();
    work().then(
      (n) => {
        note(op, started);
        cb(n);
      },
      (error: unknown) => {
        note(op, started);
        cb(report(op, path, error));
      },
    );
  }

  // Renames run alone, other namespace changes beside each other (namespace-lock.ts says why).
  const names = new NamespaceLock();

  // Requests about a file (not a name in a directory) go to its primary name when it has several: that
  // is where a hard-linked file's node, modes and times live (link-groups.ts).
  const fileOf = (path: string) => (state.links.empty ? fromFuse(path) : state.links.primaryOf(fromFuse(path)));

  return {
    init: (cb) => cb(0),
    statfs: (path, cb) => run('statfs', path, () => statfs(state), cb),
    getattr: (path, cb) => run('getattr', path, () => getattr(state, fileOf(path)), cb),
    fgetattr: (path, fd, cb) => run('getattr', path, () => fgetattr(state, fileOf(path), fd), cb),
    access: (path, mode, cb) => run('access', path, () => access(state, fileOf(path), mode), cb),
    readdir: (path, cb) => run('readdir', path, () => readdir(state, fromFuse(path)), cb),
    open: (path, flags, cb) => run('open', path, () => open(state, fileOf(path), flags), cb),
    create: (path, mode, cb, creator) => run('create', path, () => names.shared(() => create(state, fromFuse(path), mode, creator)), cb),
    read: (path, fd, buf, len, pos, cb) => runCount('read', path, () => read(state, fd, buf, len, pos), cb),
    write: (path, fd, buf, len, pos, cb) => runCount('write', path, () => write(state, fd, buf, len, pos), cb),
    writeNow: (fd, buf, len, pos, cb) => {
      const written = writeNow(state, fd, buf, len, pos);
      if (written === null) return false;
      runCount('write', '', () => written, cb);
      return true;
    },
    flush: (path, fd, cb) => run('flush', path, () => flush(state, fd), cb),
    fsync: (path, datasync, fd, cb) => run('fsync', path, () => fsync(state, fd, datasync !== 0), cb),
    release: (path, fd, cb) => run('release', path, () => release(state, fd), cb),
    truncate: (path, size, cb) => run('truncate', path, () => truncate(state, fileOf(path), size), cb),
    ftruncate: (path, fd, size, cb) => run('ftruncate', path, () => ftruncate(state, fd, size), cb),
    unlink: (path, cb) => run('unlink', path, () => names.shared(() => unlink(state, fromFuse(path))), cb),
    rename: (src, dest, cb) => run('rename', src, () => names.exclusive(() => rename(state, fromFuse(src), fromFuse(dest))), cb),
    mkdir: (path, mode, cb, creator) => run('mkdir', path, () => names.shared(() => mkdir(state, fromFuse(path), mode, creator)), cb),
    mknod: (path, mode, dev, cb, creator) => run('mknod', path, () => names.shared(() => mknod(state, fromFuse(path), mode, dev, creator)), cb),
    rmdir: (path, cb) => run('rmdir', path, () => names.shared(() => rmdir(state, fromFuse(path))), cb),
    chmod: (path, mode, cb) => run('chmod', path, () => chmod(state, fileOf(path), mode), cb),
    chown: (path, uid, gid, cb) => run('chown', path, () => chown(state, fileOf(path), uid, gid), cb),
    utimens: (path, atime, mtime, cb) => run('utimens', path, () => utimens(state, fileOf(path), atime, mtime), cb),
    link: (src, dest, cb) => run('link', dest, () => names.shared(() => link(state, fromFuse(src), fromFuse(dest))), cb),
    otherName: (path) => {
      if (state.links.empty) return null;
      const name = fromFuse(path);
      const other = state.links.namesOf(name).find((candidate) => candidate !== name);
      return other === undefined ? null : `/${other}`;
    },
    symlink: (target, path, cb, creator) => run('symlink', path, () => names.shared(() => symlink(state, target, fromFuse(path), creator)), cb),
    readlink: (path, cb) => run('readlink', path, () => readlink(state, fileOf(path)), cb),
    getxattr: (path, name, size, cb) => run('getxattr', path, () => getxattr(state, fileOf(path), name, size), cb),
    listxattr: (path, size, cb) => run('listxattr', path, () => listxattr(state, fileOf(path), size), cb),
    setxattr: (path, name, value, flags, cb) => run('setxattr', path, () => setxattr(state, fileOf(path), name, value, flags), cb),
    removexattr: (path, name, cb) => run('removexattr', path, () => removexattr(state, fileOf(path), name), cb),
    capsInUse: () => state.attrs.anyXattr('security.capability'),
    writeBehind: (fd) => writeBehind(state, fd),
    absorb: (fd, data, times, journaled, perm) => {
      const started = performance.now();
      absorb(state, fd, data, times, journaled, perm);
      note(journaled === 0 ? 'absorb' : 'absorb (closed)', started);
    },
  };
}
