// The directories one round of bringing changes to disk (incoming.ts) writes into, each opened once
// (beneath.ts: component by component, never through a link) and shared by every path of the round.
// A clone of 5,000 files opened every directory of each path three times (to look, to write, and
// `.strata/incoming` for the temp file) and closed it again: ~35,000 opens and closes, the largest
// share of the daemon's event loop in a profile of the clone (issue 38, bench/sync-clone.ts).
//
// Only open directories are kept (a missing one is asked again: a path of the round may create it).
// A directory removed by the round (the last file of it deleted, or an empty tree in a file's way)
// makes every kept one stale — they are opened afresh by the next path that needs them, and closed
// once no path uses them. A directory the user renames while the round runs is written through its
// descriptor, where it now is: the watcher then sees the files there and records them as renamed.
import { type Beneath, openBeneath } from '../beneath.js';

/** At most this many directories are kept open (a tree with a file in each of 100,000 directories). */
const MAX_OPEN = 64;

interface Kept {
  opening: Promise<Beneath>;
  users: number;
  /** no longer handed out: closed when the last user is done */
  retired: boolean;
}

export class OpenDirs {
  readonly #root: string;
  /** by project-relative path, oldest first (Map order: the first is evicted) */
  readonly #kept = new Map<string, Kept>();
  readonly #retired = new Set<Kept>();
  #closed = false;

  constructor(root: string) {
    this.#root = root;
  }

  /** Opens now and then: how many times a directory was actually opened (tests). */
  opened = 0;

  /**
   * Runs `task` with directory `dir` (project-relative) opened as openBeneath would open it; `create`
   * makes missing directories on the way. The directory stays open for the next path of the round.
   */
  async use<T>(dir: string, options: { create: boolean }, task: (beneath: Beneath) => Promise<T>): Promise<T> {
    if (this.#closed) throw new Error('OpenDirs used after close');
    let kept = this.#kept.get(dir);
    if (kept !== undefined) {
      const found = await kept.opening.catch(() => null);
      // Something else by now (or it failed): not kept, asked again below.
      if (found?.kind !== 'dir' || kept.retired) kept = undefined;
    }
    if (kept === undefined) {
      const fresh: Kept = { opening: openBeneath(this.#root, dir, options), users: 0, retired: false };
      this.opened++;
      this.#keep(dir, fresh);
      kept = fresh;
    }
    kept.users++;
    try {
      const beneath = await kept.opening;
      if (beneath.kind !== 'dir' && this.#kept.get(dir) === kept) this.#kept.delete(dir);
      return await task(beneath);
    } finally {
      kept.users--;
      if (kept.retired && kept.users === 0) await this.#close(kept);
    }
  }

  /** A directory was removed: what is kept may name one that is gone (opened again when next needed). */
  removedDirectories(): void {
    for (const kept of this.#kept.values()) {
      this.#retire(kept);
      if (kept.users === 0) void this.#close(kept);
    }
    this.#kept.clear();
  }

  /** Closes every directory (each once its last user is done). */
  async close(): Promise<void> {
    this.#closed = true;
    for (const kept of this.#kept.values()) this.#retire(kept);
    this.#kept.clear();
    await Promise.all([...this.#retired].filter((kept) => kept.users === 0).map((kept) => this.#close(kept)));
  }

  #keep(dir: string, kept: Kept): void {
    const old = this.#kept.get(dir);
    if (old !== undefined) this.#retire(old);
    this.#kept.delete(dir);
    this.#kept.set(dir, kept);
    if (this.#kept.size <= MAX_OPEN) return;
    const [oldestDir, oldest] = this.#kept.entries().next().value!;
    this.#kept.delete(oldestDir);
    this.#retire(oldest);
    if (oldest.users === 0) void this.#close(oldest);
  }

  #retire(kept: Kept): void {
    kept.retired = true;
    this.#retired.add(kept);
  }

  async #close(kept: Kept): Promise<void> {
    if (!this.#retired.delete(kept)) return;
    const beneath = await kept.opening.catch(() => null);
    if (beneath?.kind === 'dir') await beneath.dir.close().catch(() => undefined);
  }
}
