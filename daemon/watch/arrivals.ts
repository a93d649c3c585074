// Files that appeared in the project and are not looked at yet: a directory moved in (`mv big big2`
// inside the project) is walked and each of its files waits out its settle delay before examine.ts
// finds it is an indexed file under a new name and records a rename — which cancels that file's
// pending deletion. The deletions of the old directory are pending from the moment it vanished, and
// the capture pipeline commits them (and counts them for the mass-delete guard) 500 ms after the last
// one: a 2,000-file directory's renames took longer than that, the guard counted 2,000 deletions
// against a 2,020-file project and tripped (issue 38 item 1), and from then on the workstation applied
// no incoming change. So the pipeline asks this first: deletions wait while arrivals make progress.

/** Arrivals that make no progress for this long (an examine stuck on something) no longer hold deletions up. */
const STALL_MS = 2_000;

export class Arrivals {
  readonly #paths = new Set<string>();
  #walks = 0;
  #progressAt = 0;
  #waiters: Array<() => void> = [];
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** A directory appeared: its walk is under way (files found on it are added as they are found). */
  async walk<T>(task: () => Promise<T>): Promise<T> {
    this.#walks++;
    this.#progress();
    try {
      return await task();
    } finally {
      this.#walks--;
      this.#progress();
    }
  }

  /** A file found by a walk: it arrived, and is examined after its settle delay. */
  add(path: string): void {
    this.#paths.add(path);
    this.#progress();
  }

  /** A path was examined (whatever the outcome). */
  examined(path: string): void {
    if (this.#paths.delete(path)) this.#progress();
  }

  /**
   * null when nothing is arriving (or nothing moved for STALL_MS); otherwise a promise that resolves
   * at the next progress, or when the arrivals have stalled. Callers loop until null.
   */
  pending(): Promise<void> | null {
    if (this.#paths.size === 0 && this.#walks === 0) return null;
    const stalledIn = this.#progressAt + STALL_MS - this.#now();
    if (stalledIn <= 0) return null;
    return new Promise((resolve) => {
      const timer = setTimeout(done, stalledIn);
      const waiters = this.#waiters;
      function done() {
        clearTimeout(timer);
        resolve();
      }
      waiters.push(done);
    });
  }

  #progress(): void {
    this.#progressAt = this.#now();
    for (const resolve of this.#waiters.splice(0)) resolve();
  }
}
