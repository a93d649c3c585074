// When watch mode looks at a path: after its events went quiet for the settle delay (100 ms: a burst
// of writes is one version, and an editor's temp file is renamed away before we look). Exceptions.
// A path that never goes quiet (a log appended to every 50 ms) is looked at every maxWaitMs anyway,
// or every LARGE_MAX_WAIT_MS if it is a large file (each look hashes all of it). A quiet file of
// WRITER_CHECK_BYTES or more that a process still holds open for writing (writers.ts) waits for the
// close: quiet is not the end of a write (a `cp` the kernel stalls for writeback pauses longer than
// the settle delay). A NEW file with a temp-file name (capture/temp-names.ts) waits until quiet for
// tempSettleMs, so a slow atomic save — written, a pause, renamed over its target — versions only
// the target.

import type { BigIntStats } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { diskPath } from '../../engine/raw-names.js';
import { TEMP_MAX_WAIT_MS } from '../capture/temp-names.js';
import { createWriterProbe, type WriterProbe } from './writers.js';

/** Files above this size are large: still written to, they are captured every LARGE_MAX_WAIT_MS, not maxWaitMs. */
const OVERDUE_MAX_BYTES = 16 * 1024 * 1024;

/**
 * Quiet files from this size on are only captured once no process holds them open for writing. Below
 * it nothing is asked (an editor's save stays at the settle delay, and a 5,000-file copy of small files
 * costs no /proc scan); a stall long enough to cut a file that small is rare. The truncated versions
 * the tester saw were all 36–45 MiB.
 */
const WRITER_CHECK_BYTES = 1024 * 1024;

/**
 * A large file that keeps being written (a log appended to for hours, or held open) is still versioned
 * this often; a copy that takes longer than this gives a partial version each time (datasets share
 * their shards with the final version).
 */
const LARGE_MAX_WAIT_MS = 60_000;

/** How often a quiet file held open for writing is looked at again: no event reports the close. */
const WRITER_RECHECK_MS = 500;

/** When the writer check cannot tell (another user's file, no /proc): quiet this long, size and mtime unchanged. */
const UNKNOWN_WRITER_QUIET_MS = 1_000;

export interface SettleOptions {
  /** absolute project root */
  dir: string;
  settleMs: number;
  maxWaitMs: number;
  tempSettleMs: number;
  /** a temp-named file the project does not track yet (and does not ignore) */
  isNewTemp(path: string): boolean;
  examine(path: string): Promise<void>;
  /**
   * True when `st` (its lstat once quiet, null: nothing there) is still exactly what the daemon itself
   * wrote at `path` (own-writes.ts): nothing to examine.
   */
  ownWrite?(path: string, st: BigIntStats | null): boolean;
  /** who still writes a file (default: /proc, writers.ts) */
  writers?: WriterProbe;
  /** LARGE_MAX_WAIT_MS unless a test needs the cap sooner */
  largeMaxWaitMs?: number;
}

interface PathTimer {
  timer: NodeJS.Timeout;
  firstAt: number;
  lastAt: number;
  /** a new temp-named file, held until quiet for tempSettleMs (see #checkTemp) */
  temp: boolean;
  /** seen above OVERDUE_MAX_BYTES in this pending period: capped at LARGE_MAX_WAIT_MS, not maxWaitMs */
  large: boolean;
  /** size, mtime and inode at the last look while held (see #settled) */
  seen?: { size: number; mtimeNs: bigint; ino: bigint };
}

export class SettleTimers {
  readonly #options: SettleOptions;
  readonly #timers = new Map<string, PathTimer>();
  readonly #writers: WriterProbe;
  readonly #largeMaxWaitMs: number;
  #stopped = false;

  constructor(options: SettleOptions) {
    this.#options = options;
    this.#writers = options.writers ?? createWriterProbe();
    this.#largeMaxWaitMs = options.largeMaxWaitMs ?? LARGE_MAX_WAIT_MS;
  }

  get size(): number {
    return this.#timers.size;
  }

  has(path: string): boolean {
    return this.#timers.has(path);
  }

  /** An event at `path`: (re)starts its quiet period. */
  schedule(path: string): void {
    if (this.#stopped) return;
    const { settleMs, maxWaitMs } = this.#options;
    const now = Date.now();
    const existing = this.#timers.get(path);
    if (existing) clearTimeout(existing.timer);
    const firstAt = existing?.firstAt ?? now;
    // Decided once per pending period: an index lookup only for names that look like temp files.
    if (existing?.temp ?? this.#options.isNewTemp(path)) {
      this.#armTemp(path, firstAt, now, settleMs);
      return;
    }
    const large = existing?.large ?? false;
    const overdue = now - firstAt >= (large ? this.#largeMaxWaitMs : maxWaitMs);
    const entry: PathTimer = { timer: setTimeout(() => void this.#settled(path, entry, overdue), overdue ? 0 : settleMs), firstAt, lastAt: now, temp: false, large };
    this.#timers.set(path, entry);
  }

  /** Paths waiting for their quiet period that settleNow() would look at (not new temp-named files). */
  get dueCount(): number {
    let count = 0;
    for (const entry of this.#timers.values()) if (!entry.temp) count += 1;
    return count;
  }

  /**
   * Looks at every waiting path now instead of at the end of its settle delay (a restore or a
   * snapshot is about to be made: edits made before it must be in history first). The same checks
   * apply as when the delay ends: a large file still held open for writing keeps waiting for its
   * close, and a new temp-named file for its own quiet period (it is an atomic save under way).
   */
  async settleNow(): Promise<void> {
    const due = [...this.#timers].filter(([, entry]) => !entry.temp);
    await Promise.all(
      due.map(([path, entry]) => {
        clearTimeout(entry.timer);
        return this.#settled(path, entry, false);
      }),
    );
  }

  /** Stops every timer; returns the paths that were waiting (the caller examines them now). */
  stop(): string[] {
    this.#stopped = true;
    const due = [...this.#timers.keys()];
    for (const { timer } of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    return due;
  }

  #armTemp(path: string, firstAt: number, lastAt: number, delayMs: number): void {
    const timer = setTimeout(() => void this.#checkTemp(path), delayMs);
    this.#timers.set(path, { timer, firstAt, lastAt, temp: true, large: false });
  }

  /**
   * A held temp file's check, first after the ordinary settle delay: renamed away (the usual end of an
   * atomic save) it is examined at once — nothing to record, and the wait ends as fast as for any
   * other path; still there, it waits until quiet for tempSettleMs — or, if small, until written to for
   * TEMP_MAX_WAIT_MS (a `*.tmp` log); a large one still being written waits for quiet, as any does.
   */
  async #checkTemp(path: string): Promise<void> {
    const held = this.#timers.get(path);
    if (held === undefined) return;
    const st = await lstat(diskPath(this.#options.dir, path)).catch(() => null);
    // A new event re-armed it meanwhile (or stop() took it): that timer decides.
    if (this.#timers.get(path) !== held || this.#stopped) return;
    const now = Date.now();
    const quietAt = held.lastAt + this.#options.tempSettleMs;
    const capped = now - held.firstAt >= TEMP_MAX_WAIT_MS && (st?.size ?? 0) <= OVERDUE_MAX_BYTES;
    if (st !== null && now < quietAt && !capped) {
      this.#armTemp(path, held.firstAt, held.lastAt, quietAt - now);
      return;
    }
    this.#timers.delete(path);
    await this.#options.examine(path);
  }

  /**
   * A path's look: quiet for the settle delay, or `overdue` (not quiet for maxWaitMs). Small files are
   * examined at once, as is anything past its cap (maxWaitMs, or LARGE_MAX_WAIT_MS for a large file:
   * a log written all day still gets versions). A large file that is overdue waits for quiet: each
   * partial version of a copy would be hashed in full. A quiet file of WRITER_CHECK_BYTES or more
   * waits until no process holds it open for writing, looked at again every WRITER_RECHECK_MS; if
   * that cannot be told, until it has been quiet for UNKNOWN_WRITER_QUIET_MS with the same size, mtime
   * and inode at two looks. Held, the path stays pending (status, idle, reconciliation skip it); a
   * new event re-arms the settle delay and keeps the period's start, so the cap still holds. A crash
   * while held loses nothing: the file is on disk, unversioned, and the catch-up scan versions it.
   */
  async #settled(path: string, entry: PathTimer, overdue: boolean): Promise<void> {
    const file = diskPath(this.#options.dir, path);
    const st = await lstat(file, { bigint: true }).catch(() => null);
    if (!this.#holds(path, entry)) return;
    if (this.#options.ownWrite?.(path, st)) {
      this.#timers.delete(path);
      return;
    }
    const size = st?.isFile() ? Number(st.size) : 0;
    if (size > OVERDUE_MAX_BYTES) entry.large = true;
    const capMs = entry.large ? this.#largeMaxWaitMs : this.#options.maxWaitMs;
    if (st === null || size < WRITER_CHECK_BYTES || Date.now() - entry.firstAt >= capMs) {
      await this.#release(path);
      return;
    }
    if (overdue) {
      // Large and still being written to: wait for its quiet period (or the large cap).
      this.#hold(path, entry, this.#options.settleMs, capMs);
      return;
    }
    // A probe that fails (an unreadable directory on the way) is a probe that cannot tell: wait for quiet.
    const writing = await this.#writers.openForWriting(file).catch(() => null);
    if (!this.#holds(path, entry)) return;
    if (writing === false) {
      await this.#release(path);
      return;
    }
    const seen = { size: Number(st.size), mtimeNs: st.mtimeNs, ino: st.ino };
    const unchanged = entry.seen !== undefined && entry.seen.size === seen.size && entry.seen.mtimeNs === seen.mtimeNs && entry.seen.ino === seen.ino;
    if (writing === null && unchanged && Date.now() - entry.lastAt >= UNKNOWN_WRITER_QUIET_MS) {
      await this.#release(path);
      return;
    }
    entry.seen = seen;
    this.#hold(path, entry, writing ? WRITER_RECHECK_MS : UNKNOWN_WRITER_QUIET_MS, capMs);
  }

  /** Still this entry's turn (no event re-armed the path, stop() did not take it). */
  #holds(path: string, entry: PathTimer): boolean {
    return !this.#stopped && this.#timers.get(path) === entry;
  }

  /** Looks at a held path again after `delayMs`, and never later than its cap. */
  #hold(path: string, entry: PathTimer, delayMs: number, capMs: number): void {
    const untilCap = Math.max(0, entry.firstAt + capMs - Date.now());
    entry.timer = setTimeout(() => void this.#settled(path, entry, false), Math.min(delayMs, untilCap));
  }

  async #release(path: string): Promise<void> {
    this.#timers.delete(path);
    await this.#options.examine(path);
  }
}
