// The low-level side of the FUSE binding: native/fuse hands us libfuse3 low-level requests (inode
// numbers) on the JS thread; with the inode table (fuse-inodes.ts: inode ↔ path, lookup counts) this turns each
// request into the path-based FuseOps call the rest of the mount implements, then replies.
//
// What the low-level API saves (measured, docs/mount.md "The FUSE binding"): libfuse2's high-level API followed
// every create, mkdir, chmod, chown and utimens with a getattr request of its own (126,160 getattr for
// 20,000 files, each a full thread round trip). Here the reply to the change carries the attributes,
// from one extra getattr call in JS that costs no hand-off.
import type { Creator, Done, FuseOps, FuseStat, FuseStatfs, XattrAnswer } from './fuse-binding.js';
import { type Dispatch, type LowLevelOptions, type NativeFuse, type NativeHandle, Op } from './fuse-native.js';
import { InodeTable } from './fuse-inodes.js';
import type { FileTime } from './file-time.js';
import { NameRequests } from './fuse-names.js';
import { applySetattr } from './fuse-setattr.js';

const ENOENT = 2;
const EIO = 5;
const ENOSYS = 38;
const EINVAL = 22;
// What an inode whose name now holds an object of another kind answers (a restore put a file where
// a symbolic link was, before the kernel's cached name was dropped): the kernel walks a path again,
// looking every name up afresh, when a step of it answers ESTALE, and so reaches what is there now.
// Followed, the stale link answered readlink with EINVAL, and mkdir, open and stat through it failed
// with EINVAL (fsstress with restores); a stat with the new kind made the kernel call the inode bad (EIO).
const ESTALE = 116;
const S_IFLNK = 0o120000;
const ENOTSUP = 95;
const CAPABILITY = 'security.capability';
const ENAMETOOLONG = 36;
const NAME_MAX = 255;
const S_IFMT = 0o170000;
const S_IFDIR = 0o040000;

const tooLong = (name: string) => name.length > NAME_MAX / 3 && Buffer.byteLength(name) > NAME_MAX;

export class LowLevelSession {
  private readonly inodes = new InodeTable();
  /** open directories' listings by handle; null until the first READDIR (Opendir) */
  private readonly dirs = new Map<number, string[] | null>();
  private nextDirHandle = 1;
  /** native/fuse's SCRATCH_LEN (src/fuse_ll.h: which slot holds what) */
  private readonly scratch = new Float64Array(20);
  /** kernel requests received, per Op (for `strata status` and the benchmarks) */
  readonly requests = new Float64Array(Op.Closed + 1);
  private handle: NativeHandle | null = null;
  /** Resolves when the kernel side is gone (unmounted or aborted). */
  readonly closed: Promise<void>;
  private markClosed: () => void = () => {};

  private readonly names: NameRequests;

  constructor(
    private readonly native: NativeFuse,
    private readonly ops: FuseOps,
    private readonly options: LowLevelOptions,
  ) {
    this.names = new NameRequests({
      native,
      ops,
      inodes: this.inodes,
      options,
      handle: () => this.handle,
      writeStat: (stat) => this.writeStat(stat),
      attrTimeout: (stat) => this.attrTimeout(stat),
      refillDir: (ino, path) => this.refillDir(ino, path),
    });
    this.closed = new Promise((resolve) => {
      this.markClosed = resolve;
    });
  }

  mount(mnt: string, mountOptions: string): void {
    this.handle = this.native.mount(mnt, mountOptions, this.dispatch, this.options.maxWrite, this.scratch, this.options.opTimeoutMs);
    if (this.ops.capsInUse?.() === true) this.native.capsInUse(this.handle);
  }

  close(): void {
    // Bytes native/fuse still keeps belong to files open for writing: the forced captures after the
    // unmount (reconciler.flushAll) must see them.
    if (this.handle !== null) this.native.spillAll(this.handle);
    if (this.handle !== null) this.native.close(this.handle);
    this.handle = null;
    this.markClosed();
  }

  readMap(fh: number, spans: Float64Array, size: number): number {
    return this.handle === null ? -107 : this.native.readMap(this.handle, fh, spans, size);
  }

  readUnmap(fh: number): void {
    if (this.handle !== null) this.native.readUnmap(this.handle, fh);
  }

  /** What native/fuse answered without JS (fuse-native.ts `answered`). */
  answered(): number[] {
    return this.handle === null ? [] : this.native.answered(this.handle);
  }

  /**
   * Drops what the kernel cached for `path` (attributes, pages, the name and its negative entry). With
   * `renumber` (its content changed behind handles still open on the old one) the next lookup of
   * `path` gets a new inode, as after a rename over an open file: the old inode and its pages stay
   * with those handles.
   */
  async invalidate(path: string, renumber = false): Promise<void> {
    const handle = this.handle;
    if (handle === null) return;
    const slash = path.lastIndexOf('/');
    const parentPath = slash === -1 ? '' : path.slice(0, slash);
    const name = path.slice(slash + 1);
    const parent = this.inodes.inoOf(parentPath);
    const ino = this.inodes.inoOf(path);
    // One name of a hard-linked file changed behind the mount (a restore): it may be a file of its own
    // now, so its next lookup decides its inode afresh (the same one again while it is still linked).
    if (ino !== undefined && parent !== undefined && (this.inodes.hasAliases(ino) || (renumber && (this.inodes.node(ino)?.opens ?? 0) > 0))) this.inodes.detach(parent, name);
    const work: Promise<unknown>[] = [];
    if (ino !== undefined) this.native.attrDrop(handle, ino);
    if (parent !== undefined) this.native.attrDrop(handle, parent);
    if (ino !== undefined) work.push(this.native.invalidate(handle, ino, null));
    if (parent !== undefined) work.push(this.native.invalidate(handle, parent, null), this.native.invalidate(handle, parent, name));
    // A directory is there for the files below it: one behind the mount may have made or removed
    // every directory above it (`rm -r c` elsewhere removes `c` with `c/a`), so the listings and
    // attributes of all of them go too. Kept, the root's cached listing named `c` while lookup found
    // nothing, until the kernel next asked for the root's attributes (native/fuse could answer those
    // itself, with the old mtime that keeps the listing).
    if (parentPath !== '') work.push(this.invalidateDirs(parentPath));
    await Promise.all(work);
  }

  /** Directories above changed paths whose listings the kernel must drop, once per turn of the event loop. */
  private readonly staleDirs = new Set<number>();
  private staleDirsDone: Promise<void> | null = null;

  /**
   * Drops the attributes and listings of the directories above `dir`. A pull of many files in one
   * tree names the same directories again and again: each is told to the kernel once per turn.
   */
  private invalidateDirs(dir: string): Promise<void> {
    for (let path = dir; path !== ''; ) {
      const slash = path.lastIndexOf('/');
      path = slash === -1 ? '' : path.slice(0, slash);
      const ino = this.inodes.inoOf(path);
      if (ino !== undefined) this.staleDirs.add(ino);
    }
    this.staleDirsDone ??= new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      const inos = [...this.staleDirs];
      this.staleDirs.clear();
      this.staleDirsDone = null;
      const handle = this.handle;
      if (handle === null) return;
      for (const ino of inos) this.native.attrDrop(handle, ino);
      await Promise.all(inos.map((ino) => this.native.invalidate(handle, ino, null)));
    });
    return this.staleDirsDone;
  }

  /** The creating caller native/fuse put in scratch[14..15] (src/fuse_ll.c dispatch); read before any await. */
  private creator(): Creator {
    return { uid: this.scratch[14]!, gid: this.scratch[15]!, umask: this.scratch[11]! };
  }

  /**
   * How long the kernel may keep these attributes. A directory's change only through requests the
   * kernel sees (it drops the directory's attributes after each create, mkdir, unlink, rename in it)
   * or through `invalidate` (a restore): they can be kept. With default_permissions the kernel checks
   * every directory of a path walk against fresh attributes: at 0 s an untar sent 3.5x the getattrs.
   */
  private attrTimeout(stat: FuseStat): number {
    return (stat.mode & S_IFMT) === S_IFDIR ? this.options.dirAttrTimeoutS : this.options.attrTimeoutS;
  }

  /** Drops everything the kernel cached about every inode (the engine changed more than we track). */
  async invalidateAll(): Promise<void> {
    const handle = this.handle;
    if (handle === null) return;
    await Promise.all(
      this.inodes.inodes().map((ino) => {
        this.native.attrDrop(handle, ino);
        return this.native.invalidate(handle, ino, null);
      }),
    );
  }

  /** `ino` was given out for an object of another kind than the one its name holds now (ESTALE above). */
  private changedKind(ino: number, mode: number): boolean {
    const type = this.inodes.node(ino)?.type;
    return ino !== 1 && type !== undefined && type !== (mode & S_IFMT);
  }

  private writeStat(stat: FuseStat): void {
    const s = this.scratch;
    s[0] = stat.mode;
    s[1] = stat.uid;
    s[2] = stat.gid;
    s[3] = stat.size;
    s[4] = stat.nlink;
    s[5] = stat.blksize;
    s[6] = stat.blocks;
    s[7] = stat.atime.ms;
    s[8] = stat.mtime.ms;
    s[9] = stat.ctime.ms;
    s[10] = stat.rdev ?? 0;
    // Each time's nanoseconds past its millisecond, TIME_NS slots on (src/fuse_ll.h).
    s[16] = stat.atime.ns;
    s[17] = stat.mtime.ns;
    s[18] = stat.ctime.ns;
  }

  private readonly dispatch: Dispatch = (op, id, ino, n1, n2, s1, s2) => {
    if (op !== Op.Absorb) this.requests[op] = (this.requests[op] ?? 0) + 1;
    try {
      this.handleRequest(op, id, ino, n1, n2, s1, s2);
    } catch {
      // FuseOps answer through callbacks and never throw; a bug here must still answer the kernel.
      this.native.replyErr(id, EIO);
    }
  };

  private reply(id: number): Done {
    return (errno) => this.native.replyErr(id, errno < 0 ? -errno : errno);
  }

  /** Answers a request that created or found `name` in `parent` with its entry (after a getattr). */
  private entry(id: number, parent: number, name: string, path: string, onAttr?: (ino: number, cacheable: number) => void, created = false): (errno: number) => void {
    return (errno) => {
      if (errno !== 0) {
        this.native.replyErr(id, -errno);
        return;
      }
      this.ops.getattr(path, (err, stat) => {
        if (err !== 0 || stat === undefined) {
          this.native.replyErr(id, err !== 0 ? -err : EIO);
          return;
        }
        this.writeStat(stat);
        const ino = this.inodes.remember(parent, name, stat.mode, stat.link);
        const cacheable = stat.cacheable === true ? 1 : 0;
        if (onAttr !== undefined) onAttr(ino, cacheable);
        else this.native.replyEntry(id, ino, this.options.entryTimeoutS, this.attrTimeout(stat), cacheable);
        if (created) this.refillDir(parent, path.slice(0, path.lastIndexOf('/')) || '/');
      });
    };
  }

  /**
   * After a create or removal in a directory the kernel drops the directory's attributes, and with
   * default_permissions asks for them again before its next permission check there (an untar: one
   * getattr per file). The new attributes go to native/fuse now, which then answers that getattr.
   */
  private refillDir(ino: number, path: string): void {
    this.ops.getattr(path, (err, stat) => {
      const handle = this.handle;
      if (err !== 0 || stat === undefined || stat.cacheable !== true || handle === null) return;
      this.writeStat(stat);
      this.native.attrFill(handle, ino, this.attrTimeout(stat));
    });
  }

  private handleRequest(op: Op, id: number, ino: number, n1: number, n2: number, s1: string | null, s2: string | Buffer | null): void {
    const ops = this.ops;
    const native = this.native;
    if (op === Op.Closed) {
      this.markClosed();
      return;
    }
    if (op === Op.Forget) {
      this.inodes.forget(ino, n1);
      return;
    }
    if (op === Op.Absorb) {
      // Not a request: nothing to answer. Applied before the request that caused it is handled.
      if (this.ops.absorb !== undefined && s2 instanceof Buffer) {
        const s = this.scratch;
        const times = { atime: Number.isNaN(s[7]) ? null : timeAt(s, 7), mtime: timeAt(s, 8), ctime: timeAt(s, 9) };
        this.ops.absorb(n1, s2, times, n2, s[2]!);
      }
      return;
    }
    const name = s1 ?? '';
    // Requests naming a child resolve `ino` as the parent directory.
    const named = op === Op.Lookup || op === Op.Mknod || op === Op.Mkdir || op === Op.Unlink || op === Op.Rmdir || op === Op.Symlink || op === Op.Rename || op === Op.Create;
    // The kernel passes FUSE names of up to 1,024 bytes; a filesystem's are 255 (NAME_MAX), and every
    // call naming a longer one fails the same way, before any lookup (a rename's and a link's new name too).
    if ((named || op === Op.Link) && (tooLong(name) || (op === Op.Rename && typeof s2 === 'string' && tooLong(s2)))) {
      native.replyErr(id, ENAMETOOLONG);
      return;
    }
    // Requests about an open handle need no name: its release must run even when every name of the
    // file is gone from the table, or the handle (and the mount's pending capture) never ends.
    const byHandle = op === Op.Read || op === Op.Write || op === Op.Flush || op === Op.Release || op === Op.Fsync || op === Op.Releasedir;
    const path = named ? this.inodes.childPath(ino, name) : (this.inodes.pathOf(ino) ?? (byHandle ? '' : null));
    if (path === null) {
      native.replyErr(id, ENOENT);
      return;
    }
    switch (op) {
      case Op.Lookup:
        this.entry(id, ino, name, path)(0);
        return;
      case Op.Getattr: {
        const reply = (errno: number, stat?: FuseStat) => {
          if (errno !== 0 || stat === undefined) {
            native.replyErr(id, errno !== 0 ? -errno : EIO);
            return;
          }
          if (this.changedKind(ino, stat.mode)) {
            native.replyErr(id, ESTALE);
            return;
          }
          this.writeStat(stat);
          this.inodes.noteLink(ino, stat.link);
          native.replyAttr(id, ino, this.attrTimeout(stat), stat.cacheable === true ? 1 : 0);
        };
        // Through a handle (n1 is its fh, -1 for none; fstat names none): a file restored over while
        // open answers for itself, with the size of the bytes its handles read.
        const fh = n1 > 0 ? n1 : this.inodes.staleHandle(ino);
        if (fh !== undefined && ops.fgetattr !== undefined) ops.fgetattr(path, fh, reply);
        else ops.getattr(path, reply);
        return;
      }
      case Op.Setattr:
        this.setattr(id, ino, path, n1, n2);
        return;
      case Op.Readlink:
        if (ops.readlink === undefined) {
          native.replyErr(id, ENOSYS);
          return;
        }
        ops.readlink(path, (errno, target) => {
          if (errno === -EINVAL && this.inodes.node(ino)?.type === S_IFLNK) native.replyErr(id, ESTALE);
          else if (errno !== 0 || target === undefined) native.replyErr(id, errno !== 0 ? -errno : EIO);
          else native.replyReadlink(id, target);
        });
        return;
      case Op.Mknod:
        if (ops.mknod === undefined) native.replyErr(id, ENOSYS);
        else ops.mknod(path, n1, n2, this.entry(id, ino, name, path, undefined, true), this.creator());
        return;
      case Op.Mkdir:
        if (ops.mkdir === undefined) native.replyErr(id, ENOSYS);
        else ops.mkdir(path, n1, this.entry(id, ino, name, path, undefined, true), this.creator());
        return;
      case Op.Unlink:
        // An open file keeps working after its last name goes (hide); one with other names simply loses this one.
        if (this.inodes.openNode(ino, name) !== undefined && (ops.otherName?.(path) ?? null) === null) this.names.hide(id, ino, name, path, () => native.replyErr(id, 0));
        else this.names.remove(id, ino, name, path, op);
        return;
      case Op.Rmdir:
        this.names.remove(id, ino, name, path, op);
        return;
      case Op.Symlink:
        if (ops.symlink === undefined) native.replyErr(id, ENOSYS);
        else ops.symlink(typeof s2 === 'string' ? s2 : '', path, this.entry(id, ino, name, path, undefined, true), this.creator());
        return;
      case Op.Rename:
        this.names.rename(id, ino, name, path, n1, typeof s2 === 'string' ? s2 : '', n2);
        return;
      case Op.Link: {
        const dest = this.inodes.childPath(n1, name);
        if (ops.link === undefined || dest === null) native.replyErr(id, dest === null ? ENOENT : ENOSYS);
        else ops.link(path, dest, (errno) => (errno === 0 ? this.names.linked(id, ino, n1, name, dest) : native.replyErr(id, -errno)));
        return;
      }
      case Op.Open:
        ops.open(path, n1, (errno, fd) => {
          if (errno !== 0 || fd === undefined) {
            native.replyErr(id, errno !== 0 ? -errno : EIO);
            return;
          }
          // keep_cache: with AUTO_INVAL_DATA the kernel drops the pages itself when a getattr shows a new
          // mtime or size (what libfuse2's auto_cache did); restores also invalidate explicitly.
          if (native.replyOpen(id, fd, 1)) this.names.opened(ino, 1, fd);
          else ops.release(path, fd, () => {});
        });
        return;
      case Op.Create:
        ops.create(path, n1, (errno, fd) => {
          if (errno !== 0 || fd === undefined) {
            native.replyErr(id, errno !== 0 ? -errno : EIO);
            return;
          }
          this.entry(id, ino, name, path, (newIno, cacheable) => {
            const wb = cacheable === 1 ? (this.ops.writeBehind?.(fd) ?? null) : null;
            const { entryTimeoutS, attrTimeoutS } = this.options;
            if (native.replyCreate(id, newIno, entryTimeoutS, attrTimeoutS, fd, 1, cacheable, wb === null ? 0 : 1, wb?.journalFd ?? -1, wb?.journalPrefix ?? null)) this.names.opened(newIno, 1, fd);
            else ops.release(path, fd, () => {});
          }, true)(0);
        }, this.creator());
        return;
      case Op.Read: {
        const buf = Buffer.allocUnsafe(n2);
        ops.read(path, n1, buf, n2, this.scratch[0]!, (n) => {
          if (n < 0) native.replyErr(id, -n);
          else native.replyBuf(id, buf, n);
        });
        return;
      }
      case Op.Write: {
        const done = (n: number) => {
          if (n < 0) native.replyErr(id, -n);
          else native.replyWrite(id, n);
        };
        let buf = s2 instanceof Buffer ? s2 : Buffer.alloc(0);
        const at = this.scratch[12]!;
        if (at >= 0 && s2 instanceof Buffer) {
          // Lent by native/fuse: the request buffer, which the next request overwrites. Taken now, or copied.
          const lent = s2.subarray(at, at + this.scratch[13]!);
          if (ops.writeNow?.(n1, lent, lent.length, n2, done) === true) return;
          buf = Buffer.from(lent);
        }
        ops.write(path, n1, buf, buf.length, n2, done);
        return;
      }
      case Op.Flush:
        if (ops.flush === undefined) native.replyErr(id, 0);
        else ops.flush(path, n1, this.reply(id));
        return;
      case Op.Release:
        // Closed as far as the kernel is concerned, from now on: a rename or unlink handled before this
        // release finishes must not take the file for open (and hide it as .fuse_hidden*).
        this.names.opened(ino, -1, n1);
        ops.release(path, n1, (errno) => {
          this.names.unlinkIfHiddenAndClosed(ino);
          native.replyErr(id, errno < 0 ? -errno : errno);
        });
        return;
      case Op.Fsync:
        if (ops.fsync === undefined) native.replyErr(id, 0);
        else ops.fsync(path, n2, n1, this.reply(id));
        return;
      case Op.Opendir: {
        // The kernel may keep the listing it read (FOPEN_CACHE_DIR) until the directory changes: a
        // change through the mount bumps the directory's version in the kernel, one behind it (a
        // restore, a pull) invalidates the directory's inode (invalidate). So the listing is made at
        // the first READDIR, which a warm cache never sends: `git status` in a 50,000-file checkout
        // opened 500 directories and read each one's backing directory every time.
        const fh = this.nextDirHandle++;
        this.dirs.set(fh, null);
        if (!native.replyOpen(id, fh, 1 | 2)) this.dirs.delete(fh);
        return;
      }
      case Op.Readdir: {
        const offset = this.scratch[0]!;
        const listing = this.dirs.get(n1);
        if (listing !== null && listing !== undefined) {
          native.replyDir(id, listing, offset, n2);
          return;
        }
        ops.readdir(path, (errno, names) => {
          if (errno !== 0 || names === undefined) {
            native.replyErr(id, errno !== 0 ? -errno : EIO);
            return;
          }
          if (this.dirs.has(n1)) this.dirs.set(n1, names);
          native.replyDir(id, names, offset, n2);
        });
        return;
      }
      case Op.Releasedir:
        this.dirs.delete(n1);
        native.replyErr(id, 0);
        return;
      case Op.Statfs:
        if (ops.statfs === undefined) {
          native.replyErr(id, ENOSYS);
          return;
        }
        ops.statfs(path, (errno, s) => {
          if (errno !== 0 || s === undefined) {
            native.replyErr(id, errno !== 0 ? -errno : EIO);
            return;
          }
          this.writeStatfs(s);
          native.replyStatfs(id);
        });
        return;
      case Op.Getxattr:
      case Op.Listxattr: {
        const answer = (errno: number, value?: XattrAnswer) => {
          if (errno !== 0 || value === undefined) native.replyErr(id, errno !== 0 ? -errno : EIO);
          else if ('length' in value) native.replyXattr(id, value.length);
          else native.replyBuf(id, value.bytes, value.bytes.length);
        };
        if (op === Op.Getxattr) {
          if (ops.getxattr === undefined) native.replyErr(id, ENOTSUP);
          else ops.getxattr(path, name, n1, answer);
        } else if (ops.listxattr === undefined) native.replyErr(id, ENOTSUP);
        else ops.listxattr(path, n1, answer);
        return;
      }
      case Op.Setxattr:
      case Op.Removexattr: {
        // An access ACL changes the mode: what the C side would answer for the inode by itself goes.
        const done = (errno: number) => {
          if (errno === 0 && this.handle !== null) {
            this.native.attrDrop(this.handle, ino);
            // File capabilities now exist: the kernel's questions about them go to JS (src/fuse_ll.c).
            if (op === Op.Setxattr && name === CAPABILITY) this.native.capsInUse(this.handle);
          }
          native.replyErr(id, errno < 0 ? -errno : errno);
        };
        if (op === Op.Removexattr) {
          if (ops.removexattr === undefined) native.replyErr(id, ENOTSUP);
          else ops.removexattr(path, name, done);
          return;
        }
        // The value is lent by native/fuse (the request buffer) like a write's bytes: copied now.
        const at = this.scratch[12]!;
        const value = s2 instanceof Buffer ? (at >= 0 ? Buffer.from(s2.subarray(at, at + this.scratch[13]!)) : s2) : Buffer.alloc(0);
        if (ops.setxattr === undefined) native.replyErr(id, ENOTSUP);
        else ops.setxattr(path, name, value, n1, done);
        return;
      }
      case Op.Access:
        if (ops.access === undefined) native.replyErr(id, 0);
        else ops.access(path, n1, this.reply(id));
        return;
      default:
        native.replyErr(id, ENOSYS);
    }
  }

  private writeStatfs(s: FuseStatfs): void {
    const a = this.scratch;
    a[0] = s.bsize;
    a[1] = s.frsize;
    a[2] = s.blocks;
    a[3] = s.bfree;
    a[4] = s.bavail;
    a[5] = s.files;
    a[6] = s.ffree;
    a[7] = s.favail;
    a[8] = s.fsid;
    a[9] = s.flag;
    a[10] = s.namemax;
  }

  private setattr(id: number, ino: number, path: string, fh: number, toSet: number): void {
    const s = this.scratch;
    const values = { mode: s[0]!, uid: s[1]!, gid: s[2]!, size: s[3]!, atime: timeAt(s, 7), mtime: timeAt(s, 8) };
    applySetattr(this.ops, path, fh, toSet, values, (errno, stat) => {
      if (errno !== 0 || stat === undefined) {
        this.native.replyErr(id, errno !== 0 ? -errno : EIO);
        return;
      }
      if (this.changedKind(ino, stat.mode)) {
        this.native.replyErr(id, ESTALE);
        return;
      }
      this.writeStat(stat);
      this.native.replyAttr(id, ino, this.attrTimeout(stat), stat.cacheable === true ? 1 : 0);
    });
  }
}

/** The time native/fuse put at `slot`: whole ms there, the nanoseconds past them 9 slots on (src/fuse_ll.h). */
function timeAt(s: Float64Array, slot: number): FileTime {
  return { ms: s[slot]!, ns: s[slot + 9]! };
}
