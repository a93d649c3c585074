// Paths whose versions did not cross, for good, kept in the daemon's state so a restart does not
// forget them: versions made here that the server refused (a path it does not accept, a quota), and
// the server's versions this workstation could not take (a file where its directory stands here).
// They used to be a log line and a counter that only grew, and "in sync" was said over them; each is
// now a fact of the verdict (sync-verdict.ts) until a later version of the path crosses.
import type { DaemonState } from '../state.js';

export interface UnsyncedPath {
  versionId: string;
  /** why: the server's error code and message, or the reason it could not be taken here */
  reason: string;
  at: string;
}

/** Entries kept per kind; a flood of refusals keeps the newest (the count stays exact up to this). */
const MAX_KEPT = 1_000;

export class UnsyncedPaths {
  readonly #state: DaemonState;
  readonly #projectId: string;
  readonly #flag: string;
  #entries: Map<string, UnsyncedPath>;

  constructor(state: DaemonState, projectId: string, kind: 'refused' | 'skipped') {
    this.#state = state;
    this.#projectId = projectId;
    this.#flag = `sync.${kind}`;
    this.#entries = new Map(Object.entries(state.flags.get<Record<string, UnsyncedPath>>(projectId, this.#flag) ?? {}));
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The oldest path still listed (what status names as the example). */
  get example(): string | null {
    return this.#entries.keys().next().value ?? null;
  }

  /** Why the example was not synced (the server's message and code, for a refusal). */
  get exampleReason(): string | null {
    return this.#entries.values().next().value?.reason ?? null;
  }

  /** Counts per reason (what `strata sync status` lists). */
  byReason(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const { reason } of this.#entries.values()) counts[reason] = (counts[reason] ?? 0) + 1;
    return counts;
  }

  /** The versions listed (a pull never makes way for a file the server refused: it is on no server version). */
  versionIds(): string[] {
    return [...this.#entries.values()].map((entry) => entry.versionId);
  }

  add(path: string, entry: UnsyncedPath): void {
    this.#entries.delete(path);
    this.#entries.set(path, entry);
    while (this.#entries.size > MAX_KEPT) this.#entries.delete(this.#entries.keys().next().value!);
    this.#save();
  }

  /** A later version of these paths crossed: they are in step again. */
  clear(paths: Iterable<string>): void {
    let changed = false;
    for (const path of paths) changed = this.#entries.delete(path) || changed;
    if (changed) this.#save();
  }

  #save(): void {
    if (this.#entries.size === 0) this.#state.flags.delete(this.#projectId, this.#flag);
    else this.#state.flags.set(this.#projectId, this.#flag, Object.fromEntries(this.#entries));
  }
}
