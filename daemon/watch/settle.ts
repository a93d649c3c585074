// When watch mode looks at a path: after its events went quiet for the settle delay (100 ms: a burst
// of writes is one version, and an editor's temp file is renamed away before we look). Two
// exceptions. A path that never goes quiet (a log appended to every 50 ms) is looked at every
// maxWaitMs anyway, unless it is a large file still being copied. A NEW file with a temp-file name
// (capture/temp-names.ts) waits until quiet for tempSettleMs, so a slow atomic save — written, a
// pause, renamed over its target — versions only the target.

import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { TEMP_MAX_WAIT_MS } from '../capture/temp-names.js';

/** Files above this size are only captured once quiet (see #examineOverdue). */
const OVERDUE_MAX_BYTES = 16 * 1024 * 1024;

export interface SettleOptions {
  /** absolute project root */
  dir: string;
  settleMs: number;
  maxWaitMs: number;
  tempSettleMs: number;
  /** a temp-named file the project does not track yet (and does not ignore) */
  isNewTemp(path: string): boolean;
  examine(path: string): Promise<void>;
}

interface PathTimer {
  timer: NodeJS.Timeout;
  firstAt: number;
  lastAt: number;
  /** a new temp-named file, held until quiet for tempSettleMs (see #checkTemp) */
  temp: boolean;
}

export class SettleTimers {
  readonly #options: SettleOptions;
  readonly #timers = new Map<string, PathTimer>();
  #stopped = false;

  constructor(options: SettleOptions) {
    this.#options = options;
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
    const overdue = now - firstAt >= maxWaitMs;
    const timer = setTimeout(
      () => {
        this.#timers.delete(path);
        if (overdue) void this.#examineOverdue(path);
        else void this.#options.examine(path);
      },
      overdue ? 0 : settleMs,
    );
    this.#timers.set(path, { timer, firstAt, lastAt: now, temp: false });
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
    this.#timers.set(path, { timer, firstAt, lastAt, temp: true });
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
    const st = await lstat(join(this.#options.dir, path)).catch(() => null);
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
   * A path that has not been quiet for maxWaitMs: a log file appended to all day is versioned every
   * few seconds anyway, but a large file still being copied is not (each partial version would be
   * hashed in full), it waits for its quiet period.
   */
  async #examineOverdue(path: string): Promise<void> {
    const st = await lstat(join(this.#options.dir, path)).catch(() => null);
    if (st?.isFile() && st.size > OVERDUE_MAX_BYTES) {
      if (!this.#timers.has(path)) {
        const timer = setTimeout(() => {
          this.#timers.delete(path);
          void this.#options.examine(path);
        }, this.#options.settleMs);
        this.#timers.set(path, { timer, firstAt: Number.POSITIVE_INFINITY, lastAt: Date.now(), temp: false });
      }
      return;
    }
    await this.#options.examine(path);
  }
}
