// Requests that change names in the inode table, from the low-level session (fuse-lowlevel.ts): link,
// unlink and rmdir, rename, and the hiding of a file removed while open (`.fuse_hidden*`, as libfuse's
// high-level API did), with the open counts that decide when a hidden file goes.
import type { FuseOps, FuseStat } from './fuse-binding.js';
import type { InodeTable } from './fuse-inodes.js';
import { type LowLevelOptions, type NativeFuse, type NativeHandle, Op } from './fuse-native.js';

const ENOENT = 2;
const EIO = 5;
const EINVAL = 22;
const ENOSYS = 38;

/** What these requests use of the session. */
export interface SessionParts {
  readonly native: NativeFuse;
  readonly ops: FuseOps;
  readonly inodes: InodeTable;
  readonly options: LowLevelOptions;
  handle(): NativeHandle | null;
  /** puts a stat where the next reply takes it from */
  writeStat(stat: FuseStat): void;
  attrTimeout(stat: FuseStat): number;
  /** native/fuse gets the directory's new attributes (after a create or removal in it) */
  refillDir(ino: number, path: string): void;
}

export class NameRequests {
  private hiddenSeq = 0;

  constructor(private readonly s: SessionParts) {}

  /**
   * Answers link(2) with the source's own inode: the kernel then has one inode with two names, as on
   * any filesystem (same st_ino, one page cache, nlink for both). The new name's attributes carry the
   * file's link key, noted for the source first so that `remember` finds it.
   */
  linked(id: number, ino: number, parent: number, name: string, dest: string): void {
    this.s.ops.getattr(dest, (errno, stat) => {
      if (errno !== 0 || stat === undefined) {
        this.s.native.replyErr(id, errno !== 0 ? -errno : EIO);
        return;
      }
      this.s.writeStat(stat);
      this.s.inodes.noteLink(ino, stat.link);
      const same = this.s.inodes.remember(parent, name, stat.mode, stat.link);
      this.s.native.replyEntry(id, same, this.s.options.entryTimeoutS, this.s.attrTimeout(stat), stat.cacheable === true ? 1 : 0);
      this.s.refillDir(parent, dest.slice(0, dest.lastIndexOf('/')) || '/');
    });
  }

  remove(id: number, parent: number, name: string, path: string, op: Op.Unlink | Op.Rmdir): void {
    const call = op === Op.Unlink ? this.s.ops.unlink : this.s.ops.rmdir;
    if (call === undefined) {
      this.s.native.replyErr(id, ENOSYS);
      return;
    }
    // The file may live on under another name: what the kernel (and native/fuse) keep of it is out of date.
    const survivor = op === Op.Unlink ? (this.s.ops.otherName?.(path) ?? null) : null;
    call(path, (errno) => {
      if (errno === 0) {
        const ino = this.s.inodes.child(parent, name);
        this.s.inodes.detach(parent, name);
        if (ino !== undefined && this.s.handle() !== null && op === Op.Unlink) this.s.native.attrDrop(this.s.handle()!, ino);
        if (ino !== undefined && survivor !== null) this.s.inodes.keepReachable(ino, survivor);
        else if (ino !== undefined) this.s.inodes.retire(ino);
      }
      this.s.native.replyErr(id, -errno);
      if (errno === 0) this.s.refillDir(parent, path.slice(0, path.lastIndexOf('/')) || '/');
    });
  }

  /**
   * A file removed (or replaced by a rename) while open keeps working through its descriptors, fstat
   * included: like libfuse's high-level API (which the mount's code expects, see paths.ts
   * isFuseHidden) it is renamed to `.fuse_hidden*` and unlinked at its last release.
   */
  hide(id: number, parent: number, name: string, path: string, then: () => void): void {
    const ino = this.s.inodes.child(parent, name);
    const rename = this.s.ops.rename;
    const node = ino === undefined ? undefined : this.s.inodes.node(ino);
    if (ino === undefined || node === undefined || rename === undefined) {
      then();
      return;
    }
    this.hiddenSeq += 1;
    const hiddenName = `.fuse_hidden${ino.toString(16).padStart(8, '0')}${this.hiddenSeq.toString(16).padStart(8, '0')}`;
    const hiddenPath = `${path.slice(0, path.lastIndexOf('/'))}/${hiddenName}`;
    rename(path, hiddenPath, (errno) => {
      if (errno !== 0) {
        this.s.native.replyErr(id, -errno);
        return;
      }
      this.s.inodes.detach(parent, name);
      // What native/fuse would answer for it by itself (nlink 1) is out of date: getattr asks JS again.
      if (this.s.handle() !== null) this.s.native.attrDrop(this.s.handle()!, ino);
      node.name = hiddenName;
      node.hidden = true;
      this.s.inodes.setChild(parent, hiddenName, ino);
      then();
      // Its last release may have come while the rename ran.
      this.unlinkIfHiddenAndClosed(ino);
    });
  }

  opened(ino: number, delta: number, fh: number): void {
    const node = this.s.inodes.node(ino);
    if (node === undefined) return;
    node.opens += delta;
    if (delta < 0) {
      node.fhs?.delete(fh);
      return;
    }
    node.fhs ??= new Set();
    node.fhs.add(fh);
  }

  /** A hidden file goes once nothing has it open (by its current, hidden, path). */
  unlinkIfHiddenAndClosed(ino: number): void {
    const node = this.s.inodes.node(ino);
    if (node === undefined || !node.hidden || node.opens > 0 || this.s.ops.unlink === undefined) return;
    const path = this.s.inodes.pathOf(ino);
    node.hidden = false;
    this.s.inodes.detach(node.parent, node.name);
    if (path !== null) this.s.ops.unlink(path, () => {});
  }

  rename(id: number, parent: number, name: string, src: string, newParent: number, newName: string, flags: number): void {
    const dest = this.s.inodes.childPath(newParent, newName);
    // RENAME_NOREPLACE / RENAME_EXCHANGE: not offered by the path API (libfuse's high-level API refused them too).
    if (flags !== 0 || dest === null || this.s.ops.rename === undefined) {
      this.s.native.replyErr(id, flags !== 0 ? EINVAL : dest === null ? ENOENT : ENOSYS);
      return;
    }
    const rename = this.s.ops.rename;
    const run = () =>
      rename(src, dest, (errno) => {
      if (errno === 0) {
        const ino = this.s.inodes.child(parent, name);
        // The moved file's ctime, and whatever was replaced: what native/fuse keeps for them is out of date.
        const replaced = this.s.inodes.child(newParent, newName);
        if (this.s.handle() !== null) {
          if (ino !== undefined) this.s.native.attrDrop(this.s.handle()!, ino);
          if (replaced !== undefined) this.s.native.attrDrop(this.s.handle()!, replaced);
          // The request was about `parent`: the other directory's kept attributes are dropped here.
          this.s.native.attrDrop(this.s.handle()!, newParent);
        }
        this.s.inodes.detach(newParent, newName);
        this.s.inodes.detach(parent, name);
        if (ino !== undefined) this.s.inodes.addName(ino, newParent, newName);
        if (replaced !== undefined && replaced !== ino) this.s.inodes.retire(replaced);
      }
      this.s.native.replyErr(id, -errno);
    });
    const replacesOpen = this.s.inodes.openNode(newParent, newName) !== undefined && this.s.inodes.child(parent, name) !== this.s.inodes.child(newParent, newName);
    if (replacesOpen && (this.s.ops.otherName?.(dest) ?? null) === null) {
      this.hide(id, newParent, newName, dest, run);
    } else {
      run();
    }
  }
}
