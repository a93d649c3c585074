// What the stress runs do to the project while fsx or fsstress runs in the mount: snapshots and
// restores through the control API, at moments paced by the seed's PRNG (a pace, not a wait for a
// condition: the point is that they land at random points of the exerciser's run).

import type { VersionRecord } from '../../engine/types.js';
import { type Control, holdingLock, prng } from './lib.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface FsxDisturbances {
  snapshots: number;
  snapshotRestores: number;
  versionRestores: number;
}

/**
 * Until `stop()`: every 50–400 ms a snapshot, a restore of one of the snapshots taken so far, or a
 * restore of one of `file`'s versions. Each restore holds fsx's --lock-file (test/stress/fsx.py says
 * why). Any refusal is thrown.
 */
export async function disturbFsx(control: Control, file: string, lockFile: string, seed: number, stop: () => boolean): Promise<FsxDisturbances> {
  const random = prng(seed);
  const done: FsxDisturbances = { snapshots: 0, snapshotRestores: 0, versionRestores: 0 };
  const snapshots: string[] = [];
  while (!stop()) {
    await sleep(50 + Math.floor(random() * 350));
    if (stop()) break;
    const pick = random();
    if (pick < 0.4 || snapshots.length === 0) {
      const snapshot = await control.api<{ snapshotId: string }>('POST', control.project('/fs/snapshots'), { message: `fsx ${seed}` });
      snapshots.push(snapshot.snapshotId);
      done.snapshots += 1;
    } else if (pick < 0.7) {
      const snapshotId = snapshots[Math.floor(random() * snapshots.length)]!;
      await holdingLock(lockFile, () => control.api('POST', control.project(`/fs/snapshots/${snapshotId}/restore`)));
      done.snapshotRestores += 1;
    } else {
      const history = await control.api<{ items: VersionRecord[] }>('GET', control.project(`/history?path=${encodeURIComponent(file)}&limit=1000`));
      const versions = history.items.filter((v) => v.contentHash !== null);
      if (versions.length === 0) continue;
      const versionId = versions[Math.floor(random() * versions.length)]!.versionId;
      await holdingLock(lockFile, () => control.api('POST', control.project('/history/restore'), { versionId }));
      done.versionRestores += 1;
    }
  }
  return done;
}

export interface TreeDisturbances {
  snapshots: number;
  restores: number;
  /** restores refused for a directory in the way */
  refused: string[];
  /** calls that failed otherwise (each with how long it took): a defect, reported by the caller */
  failures: string[];
  /** the longest snapshot or restore call, ms */
  slowestMs: number;
}

/**
 * Until `stop()`: a snapshot every 100–500 ms and, with `restores`, after the 3rd and the 6th a
 * restore of one taken earlier. A restore refused for a directory in the way (409 PATH_IS_DIRECTORY:
 * a worker's file is open or unversioned there) is a right answer. Other failures are collected, not
 * thrown, so that the run goes on and the caller reports them all.
 */
export async function disturbTree(control: Control, seed: number, stop: () => boolean, restores: boolean): Promise<TreeDisturbances> {
  const random = prng(seed);
  const done: TreeDisturbances = { snapshots: 0, restores: 0, refused: [], failures: [], slowestMs: 0 };
  const snapshots: string[] = [];
  const timed = async <T>(call: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    try {
      return await call();
    } finally {
      done.slowestMs = Math.max(done.slowestMs, Date.now() - started);
    }
  };
  while (!stop()) {
    await sleep(100 + Math.floor(random() * 400));
    if (stop()) break;
    try {
      const snapshot = await timed(() => control.api<{ snapshotId: string }>('POST', control.project('/fs/snapshots'), { message: `fsstress ${seed}` }));
      snapshots.push(snapshot.snapshotId);
      done.snapshots += 1;
    } catch (error) {
      done.failures.push((error as Error).message);
      continue;
    }
    if (!restores || (done.snapshots !== 3 && done.snapshots !== 6)) continue;
    const snapshotId = snapshots[Math.floor(random() * (snapshots.length - 1))]!;
    try {
      await timed(() => control.api('POST', control.project(`/fs/snapshots/${snapshotId}/restore`)));
      done.restores += 1;
    } catch (error) {
      const message = (error as Error).message;
      if (/→ 409: .*PATH_IS_DIRECTORY/s.test(message)) done.refused.push(message);
      else done.failures.push(message);
    }
  }
  return done;
}
