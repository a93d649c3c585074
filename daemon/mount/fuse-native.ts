// What native/fuse exports and the numbers it uses for requests: the contract between
// the C side and fuse-lowlevel.ts.

/** Request kinds, as numbered in native/fuse/src/fuse_ll.h. */
export enum Op {
  Lookup = 0,
  Forget,
  Getattr,
  Setattr,
  Readlink,
  Mknod,
  Mkdir,
  Unlink,
  Rmdir,
  Symlink,
  Rename,
  Link,
  Open,
  Read,
  Write,
  Flush,
  Release,
  Fsync,
  Opendir,
  Readdir,
  Releasedir,
  Statfs,
  Access,
  Create,
  Closed,
  /** not a kernel request: native/fuse hands over a new file's kept bytes and times (src/write_behind.c) */
  Absorb,
  Setxattr,
  Getxattr,
  Listxattr,
  Removexattr,
}

export interface NativeHandle {
  readonly __strataFuseHandle: never;
}

export type Dispatch = (op: number, id: number, ino: number, n1: number, n2: number, s1: string | null, s2: string | Buffer | null) => void;

/** native/fuse's exports (src/serve.c, replies.c, attrs.c, write_behind.c). Replies return false when the request was already answered or interrupted. */
export interface NativeFuse {
  mount(mnt: string, options: string, dispatch: Dispatch, maxWrite: number, scratch: Float64Array, opTimeoutMs: number): NativeHandle;
  close(handle: NativeHandle): void;
  /** mknod(2) on a real path: 0 or the errno (src/serve.c). */
  mknod(path: string, mode: number, dev: number): number;
  /** utimensat(2) on a real path, never through a link, to the nanosecond (NaN ms: leave that time): 0 or the errno (src/serve.c). */
  lutimens(path: string, atimeMs: number, atimeNs: number, mtimeMs: number, mtimeNs: number): number;
  /** lgetxattr(2) into `into`: the value's length (copied when it fits), or -errno (src/xattrs.c); likewise the others. */
  backingGetxattr(path: string, name: string, into: Buffer): number;
  backingListxattr(path: string, into: Buffer): number;
  backingSetxattr(path: string, name: string, value: Buffer, flags: number): number;
  backingRemovexattr(path: string, name: string): number;
  /** Some file may have file capabilities: the kernel's questions about them go to JS from now on (src/xattrs.c). */
  capsInUse(handle: NativeHandle): void;
  /** The length a getxattr or listxattr asked with size 0 is answered (src/xattrs.c). */
  replyXattr(id: number, size: number): boolean;
  invalidate(handle: NativeHandle, ino: number, name: string | null): Promise<number>;
  /** The attributes in scratch are what the C side may answer for `ino` (src/replies.c attrFill). */
  attrFill(handle: NativeHandle, ino: number, attrTimeoutS: number): void;
  /** Forgets the attributes the C side would answer for `ino` by itself (src/attrs.c). */
  attrDrop(handle: NativeHandle, ino: number): void;
  /**
   * [getattr, setattr, write, setattr of times, hand-overs, flush, read]: requests the C side answered
   * without JS (from those attributes, by write-behind, from mapped content), and write-behind's
   * hand-overs to JS.
   */
  answered(handle: NativeHandle): number[];
  /**
   * Serves `fh`'s reads from these spans of local files ([descriptor, offset, size] each, in content
   * order; the descriptors are duplicated) without JS (src/read_maps.c): 0 or -errno.
   */
  readMap(handle: NativeHandle, fh: number, spans: Float64Array, size: number): number;
  readUnmap(handle: NativeHandle, fh: number): void;
  /** Hands over every new file's bytes and times native/fuse kept (src/write_behind.c), synchronously. */
  spillAll(handle: NativeHandle): void;
  replyErr(id: number, errno: number): boolean;
  // `cacheable` 1: the attributes stay true until the next request about the inode (src/attrs.c).
  replyEntry(id: number, ino: number, entryTimeoutS: number, attrTimeoutS: number, cacheable?: number): boolean;
  // `writeBehind` 1: a new empty file open once; native/fuse may keep its appended bytes and times,
  // and with the journal's descriptor and the file's record header up to its size, journal its close.
  replyCreate(
    id: number,
    ino: number,
    entryTimeoutS: number,
    attrTimeoutS: number,
    fh: number,
    keepCache: number,
    cacheable?: number,
    writeBehind?: number,
    journalFd?: number,
    journalPrefix?: string | null,
  ): boolean;
  replyAttr(id: number, ino: number, attrTimeoutS: number, cacheable?: number): boolean;
  /** flags: 1 keep the file's cached pages, 2 (a directory) let the kernel keep its listing */
  replyOpen(id: number, fh: number, flags: number): boolean;
  replyWrite(id: number, count: number): boolean;
  replyBuf(id: number, buf: Buffer, length: number): boolean;
  replyReadlink(id: number, target: string): boolean;
  replyStatfs(id: number): boolean;
  replyDir(id: number, names: string[], start: number, size: number): boolean;
}

export interface LowLevelOptions {
  attrTimeoutS: number;
  /** directories' attribute cache (fuse-lowlevel.ts attrTimeout) */
  dirAttrTimeoutS: number;
  entryTimeoutS: number;
  maxWrite: number;
  /** a request not answered by then fails with EIO (0 = never) */
  opTimeoutMs: number;
}

