// Orders the mount's namespace changes against renames. The kernel lets a rename of a directory run
// beside a create, link or unlink deep inside it (they lock different directories), and our rename
// moves every name below the directory over several awaits (ops-dirs.ts renameDir). A name made
// below it meanwhile was left at the old path in the mount's tables while the hard-link table moved
// it: listings then named files that lookups could not find (fsstress, four workers). So a rename
// runs alone; every other change runs beside the others, as before.

interface Waiter {
  exclusive: boolean;
  go: () => void;
}

export class NamespaceLock {
  #shared = 0;
  #exclusive = false;
  readonly #waiting: Waiter[] = [];

  /** Runs `work` beside other shared work, never beside exclusive work. */
  shared<T>(work: () => Promise<T>): Promise<T> {
    // Waiting renames go first: a stream of creates (an untar) must not hold a rename back for good.
    if (!this.#exclusive && this.#waiting.length === 0) {
      this.#shared += 1;
      return this.#run(work, false);
    }
    return new Promise<void>((go) => this.#waiting.push({ exclusive: false, go })).then(() => this.#run(work, false));
  }

  /** Runs `work` alone. */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    if (!this.#exclusive && this.#shared === 0 && this.#waiting.length === 0) {
      this.#exclusive = true;
      return this.#run(work, true);
    }
    return new Promise<void>((go) => this.#waiting.push({ exclusive: true, go })).then(() => this.#run(work, true));
  }

  async #run<T>(work: () => Promise<T>, exclusive: boolean): Promise<T> {
    try {
      return await work();
    } finally {
      if (exclusive) this.#exclusive = false;
      else this.#shared -= 1;
      this.#admit();
    }
  }

  /** Lets the next waiters in, in order: one exclusive, or every shared one up to the next exclusive. */
  #admit(): void {
    if (this.#exclusive) return;
    while (this.#waiting.length > 0) {
      const next = this.#waiting[0]!;
      if (next.exclusive) {
        if (this.#shared > 0) return;
        this.#waiting.shift();
        this.#exclusive = true;
        next.go();
        return;
      }
      this.#waiting.shift();
      this.#shared += 1;
      next.go();
    }
  }
}
