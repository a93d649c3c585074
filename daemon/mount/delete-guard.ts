// The mass-delete guard (capture/guard.ts) for unlinks through the mount. Watch mode sees deletions
// after the fact and can only decline to record them; the mount sees each unlink before it happens
// and can refuse it: once the guard trips, the files stay where they are (and in the engine), the
// tool gets EPERM, and status says so, until `strata guard reset`. Deletions admitted before the trip
// are ordinary tombstones, restorable like any.
//
// The guard compares a burst with the number of files the project has. The mount does not hold that
// number (it loads directory listings lazily), so it asks the engine (one pass over the current
// entries) — at mount time and in the background every TRACKED_MAX_AGE_MS; and when a deletion could
// trip the guard while files were written since the last count, first: a count taken before a tool
// created the files must not trip it by mistake (found by test/mount-guard.test.ts: a count of 0 from
// mount time, 100 files written, then 20 deleted).

import type { Engine } from '../../engine/engine-api.js';
import type { CapturePipeline } from '../host.js';
import { GUARD_MIN_FILES, GUARD_WINDOW_MS } from '../capture/guard.js';
import { isYoung } from '../capture/young-files.js';

const TRACKED_MAX_AGE_MS = 30_000;
/**
 * Recounts before a deletion that could trip the guard are at least this far apart: a burst of
 * deletions with writes in between costs at most four counts a second, each one pass over the entries.
 */
const RECOUNT_MIN_INTERVAL_MS = 250;

export class MountDeleteGuard {
  #count: { files: number; at: number } | null = null;
  #counting: Promise<number> | null = null;
  /** when recent file deletions were admitted (the last GUARD_WINDOW_MS) */
  #admitted: number[] = [];
  /** versions written since the last count began: files may have been created */
  #writesSinceCount = 0;

  constructor(
    private readonly engine: Engine,
    private readonly projectId: string,
    private readonly capture: CapturePipeline,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts in the background (at mount time, so the first deletion need not wait). */
  prime(): void {
    void this.#recount().catch(() => undefined);
  }

  /** The mount versioned a write (perhaps a new file): the count may be low. */
  noteWrite(): void {
    this.#writesSinceCount += 1;
  }

  /** Asked before an unlink of a tracked file; false = refuse with EPERM. */
  async admit(path: string): Promise<boolean> {
    const now = this.now();
    this.#trim(now);
    // In a burst, a file made in the last hour is let go without counting (young-files.ts): `rm -rf`
    // of a tree written a minute ago was refused after ~3,200 of 10,000 files.
    if (this.#admitted.length + 1 >= GUARD_MIN_FILES && (await isYoung(this.engine, this.projectId, path, now))) return true;
    const age = this.#count === null ? Number.POSITIVE_INFINITY : now - this.#count.at;
    const stale = age > TRACKED_MAX_AGE_MS || (this.#writesSinceCount > 0 && age > RECOUNT_MIN_INTERVAL_MS);
    // This deletion could trip the guard: decide against a count that knows of the files written.
    if (this.#admitted.length + 1 >= GUARD_MIN_FILES && stale) await this.#recount().catch(() => undefined);
    else if (age > TRACKED_MAX_AGE_MS) this.prime();
    const admitted = this.capture.admitDelete(path);
    if (admitted) this.#admitted.push(this.now());
    return admitted;
  }

  /**
   * Files the project has, for the guard: the engine's count plus the deletions admitted within the
   * window (their tombstones may have committed since: the guard wants the files the burst began with).
   * Over-counting by a few makes the guard trip a little later; it never trips on a count of nothing.
   */
  tracked(localFiles: number): number {
    this.#trim(this.now());
    return Math.max(this.#count?.files ?? 0, localFiles) + this.#admitted.length;
  }

  #trim(now: number): void {
    const cutoff = now - GUARD_WINDOW_MS;
    while (this.#admitted.length > 0 && this.#admitted[0]! < cutoff) this.#admitted.shift();
  }

  #recount(): Promise<number> {
    if (this.#counting === null) this.#writesSinceCount = 0;
    this.#counting ??= this.engine
      .countFiles(this.projectId)
      .then((files) => {
        this.#count = { files, at: this.now() };
        return files;
      })
      .finally(() => {
        this.#counting = null;
      });
    return this.#counting;
  }
}
