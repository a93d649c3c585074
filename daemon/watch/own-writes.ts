// What this daemon itself just wrote into the directory (materialize.ts), so the watcher's event for
// the write costs one lstat instead of an examine (issue 38: on a clone of 5,000 small files the
// watcher looking at each file the daemon had just written — lstat, realpath, index read and
// compare — was ~0.8 s of the receiving daemon's ~11 s of CPU).
//
// A record is the written file's inode, size, mode and mtime from the fstat taken before its rename, and
// the window its ctime may have: from that fstat (the last change the daemon made to it) to just
// after the rename returned (rename updates the ctime on ext4, xfs, btrfs). The file matches only if
// all of them still hold. Anything another tool does afterwards breaks at least one: a new file
// (atomic save, `cp` over it after an unlink) is a new inode; a write in place moves the mtime to
// now, while the daemon's is the version's time, at least 100 ms in the past (writtenMtime); even a
// `touch -d` back to that very mtime changes the ctime. (The ctime clock is coarse, a few ms behind
// the real time: only a write that also put the mtime back to the exact nanosecond within that
// window would pass — as it would the index compare examine makes, which has no ctime at all.)
// Whatever does not match is examined as before.
import type { BigIntStats } from 'node:fs';

/** Records kept at most (the oldest go first); one whose event never came only costs memory. */
const MAX_RECORDS = 50_000;

interface Written {
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeFromNs: bigint;
  ctimeToNs: bigint;
  mode: bigint;
}

export class OwnWrites {
  readonly #written = new Map<string, Written>();
  readonly #nowMs: () => number;

  constructor(nowMs: () => number = Date.now) {
    this.#nowMs = nowMs;
  }

  /**
   * `path` was just renamed into place; `st` is the fstat of its descriptor before the rename (so it
   * cannot hold anyone else's write). Called once the rename has returned.
   */
  note(path: string, st: BigIntStats): void {
    // The ms clock truncates, the kernel's ctime clock lags: one ms more covers the rename's own tick.
    const ctimeToNs = BigInt(this.#nowMs() + 1) * 1_000_000n;
    this.#written.delete(path);
    this.#written.set(path, { ino: st.ino, size: st.size, mtimeNs: st.mtimeNs, ctimeFromNs: st.ctimeNs, ctimeToNs, mode: st.mode });
    if (this.#written.size > MAX_RECORDS) this.#written.delete(this.#written.keys().next().value!);
  }

  /**
   * Whether `st` (an lstat of `path` taken after its event) is still exactly the file the daemon
   * wrote there. The record is used up either way: a later event is examined as usual.
   */
  take(path: string, st: BigIntStats | null): boolean {
    const written = this.#written.get(path);
    if (written === undefined) return false;
    this.#written.delete(path);
    return (
      st?.isFile() === true &&
      st.ino === written.ino &&
      st.size === written.size &&
      st.mtimeNs === written.mtimeNs &&
      st.mode === written.mode &&
      st.ctimeNs >= written.ctimeFromNs &&
      st.ctimeNs <= written.ctimeToNs
    );
  }
}
