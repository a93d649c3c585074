// The mass-delete guard: when more than 25% of the tracked files (and at least 20) vanish within 5 s —
// an unmounted network drive, a sync tool gone wrong, `rm -rf` in the wrong place — Strata stops
// recording deletions for the project and says so loudly. Nothing is lost either way: a tombstone
// keeps history, but thousands of them would bury the files' current state in every listing and
// snapshot, and the user most likely wants the files back, not their deletion versioned. Files made
// in the last hour never count (young-files.ts): removing a tree one just made is ordinary work.

export const GUARD_WINDOW_MS = 5_000;
export const GUARD_MIN_FILES = 20;
export const GUARD_SHARE = 0.25;

export interface GuardState {
  tripped: boolean;
  /** RFC 3339 */
  since: string | null;
  /** tracked paths whose deletion is held back since it tripped (each path once) */
  missing: number;
}

export class MassDeleteGuard {
  #times: number[] = [];
  #state: GuardState;
  #graceUntil = 0;

  constructor(initial?: GuardState) {
    this.#state = initial ? { ...initial } : { tripped: false, since: null, missing: 0 };
  }

  get state(): GuardState {
    return { ...this.#state };
  }

  get tripped(): boolean {
    return this.#state.tripped;
  }

  /** Whether `count` more deletions at `nowMs` would trip it (nothing is counted). */
  wouldTrip(count: number, nowMs: number, tracked: number): boolean {
    if (this.#state.tripped || nowMs < this.#graceUntil) return false;
    const cutoff = nowMs - GUARD_WINDOW_MS;
    const recent = this.#times.filter((at) => at >= cutoff).length + count;
    return recent >= GUARD_MIN_FILES && recent > GUARD_SHARE * Math.max(tracked, recent);
  }

  /**
   * Counts `count` deletions at `nowMs` against `tracked` files. Returns true when this trips the
   * guard (the caller then holds back every pending deletion).
   */
  note(count: number, nowMs: number, tracked: number): boolean {
    for (let i = 0; i < count; i++) this.#times.push(nowMs);
    const cutoff = nowMs - GUARD_WINDOW_MS;
    while (this.#times.length > 0 && this.#times[0]! < cutoff) this.#times.shift();
    if (this.#state.tripped || nowMs < this.#graceUntil) return false;
    const recent = this.#times.length;
    // `tracked` still includes the files being deleted (they leave the count when their tombstones commit).
    if (recent >= GUARD_MIN_FILES && recent > GUARD_SHARE * Math.max(tracked, recent)) {
      this.#state = { tripped: true, since: new Date(nowMs).toISOString(), missing: 0 };
      return true;
    }
    return false;
  }

  /** How many distinct paths' deletions are held back now (the caller keeps the paths: state.heldDeletes). */
  setMissing(count: number): void {
    this.#state.missing = count;
  }

  /** Untrips; deletions within `graceMs` (the ones the user just confirmed) never trip it again. */
  reset(nowMs = 0, graceMs = 0): void {
    this.#times = [];
    this.#state = { tripped: false, since: null, missing: 0 };
    this.#graceUntil = nowMs + graceMs;
  }
}
