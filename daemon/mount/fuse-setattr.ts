// A kernel setattr as the path operations it stands for, in the order libfuse's high-level API used
// (chmod, chown, truncate, utimens), then the new attributes: the reply carries them, so the kernel
// needs no getattr request afterwards.
import type { FileTime } from './file-time.js';
import type { Done, FuseOps, FuseStat } from './fuse-binding.js';

// FUSE_SET_ATTR_* (fuse_lowlevel.h)
const SET_MODE = 1 << 0;
const SET_UID = 1 << 1;
const SET_GID = 1 << 2;
const SET_SIZE = 1 << 3;
const SET_ATIME = 1 << 4;
const SET_MTIME = 1 << 5;
const SET_ATIME_NOW = 1 << 7;
const SET_MTIME_NOW = 1 << 8;

const EIO = 5;

/** The new values, as native/fuse put them in the scratch array (a time to set "now": the clock's there). */
export interface SetattrValues {
  mode: number;
  uid: number;
  gid: number;
  size: number;
  atime: FileTime;
  mtime: FileTime;
}

export function applySetattr(ops: FuseOps, path: string, fh: number, toSet: number, values: SetattrValues, done: (errno: number, stat?: FuseStat) => void): void {
  const { mode, uid, gid, size, atime, mtime } = values;
  const steps: Array<(next: Done) => void> = [];
  if ((toSet & SET_MODE) !== 0 && ops.chmod !== undefined) {
    const chmod = ops.chmod;
    steps.push((next) => chmod(path, mode, next));
  }
  if ((toSet & (SET_UID | SET_GID)) !== 0 && ops.chown !== undefined) {
    const chown = ops.chown;
    steps.push((next) => chown(path, (toSet & SET_UID) !== 0 ? uid : -1, (toSet & SET_GID) !== 0 ? gid : -1, next));
  }
  if ((toSet & SET_SIZE) !== 0) {
    const { ftruncate, truncate } = ops;
    if (fh >= 0 && ftruncate !== undefined) steps.push((next) => ftruncate(path, fh, size, next));
    else if (truncate !== undefined) steps.push((next) => truncate(path, size, next));
  }
  if ((toSet & (SET_ATIME | SET_MTIME | SET_ATIME_NOW | SET_MTIME_NOW)) !== 0 && ops.utimens !== undefined) {
    const utimens = ops.utimens;
    // A time that is not set is null: "keep it" (FuseOps.utimens). tar sets only mtime; reading the
    // current atime first was one more getattr per file.
    const pick = (set: number, value: FileTime) => ((toSet & set) !== 0 ? value : null);
    steps.push((next) => utimens(path, pick(SET_ATIME | SET_ATIME_NOW, atime), pick(SET_MTIME | SET_MTIME_NOW, mtime), next));
  }
  const step = (i: number) => {
    if (i === steps.length) {
      ops.getattr(path, (errno, stat) => {
        if (errno !== 0 || stat === undefined) done(errno !== 0 ? errno : -EIO);
        else done(0, stat);
      });
      return;
    }
    steps[i]!((errno) => {
      if (errno !== 0) done(errno);
      else step(i + 1);
    });
  };
  step(0);
}
