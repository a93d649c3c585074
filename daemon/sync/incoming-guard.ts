// The incoming mass-delete guard (issue 14): a change set from the server that deletes much of the
// project — another workstation's unmounted drive seen as "everything deleted", the Seafile #1398
// story — is held, not applied, until the user confirms (`strata sync confirm`). Same rule as the
// local guard (daemon/capture/guard.ts): more than 25% of the files, and at least 20 — counted over
// the last minutes, not per page of the feed, so a deletion that arrives in small pages is seen whole.
// Moves (content that leaves one path and appears at another in the same change set) are not
// deletions and never reach it (moves.ts). Deletions the user confirmed are applied and forgotten: one
// held right after a confirmed 30-file deletion counted those 30 again as "recent" (issue 38).
import type { DaemonState } from '../state.js';
import { GUARD_MIN_FILES, GUARD_SHARE } from '../capture/guard.js';

export interface IncomingDeleteGuard {
  /**
   * `deletes`: files here the page would delete; `ahead`: those the rest of its change set (read ahead,
   * not applied yet) would delete, judged with it but not remembered (they count when their page
   * comes). false: hold it (too much); the caller does not apply it.
   */
  admit(deletes: number, files: number, ahead?: number): boolean;
  /** the held change set, or null */
  held(): HeldDeletes | null;
  /** apply what is held, and what follows until the feed is read to its end */
  confirm(): void;
  /** the feed was read to its end: a confirmation covers no more */
  caughtUp(): void;
}

/**
 * What is held: `deletes` files here the held change set would delete (all still here), of `files`;
 * `recent` deletions the server's changes made here in the last minutes, which counted towards the
 * decision (a deletion arriving in several change sets is judged whole).
 */
export interface HeldDeletes {
  deletes: number;
  files: number;
  recent?: number;
}

const WINDOW_MS = 5 * 60_000;
const HELD = 'sync.incomingHeld';
const CONFIRMED = 'sync.incomingConfirmed';

export function incomingDeleteGuard(state: DaemonState, projectId: string): IncomingDeleteGuard {
  const { flags } = state;
  /** deletions applied lately: time and count */
  let recent: Array<{ at: number; count: number }> = [];
  return {
    admit(deletes, files, ahead = 0) {
      const now = Date.now();
      recent = recent.filter((r) => now - r.at < WINDOW_MS);
      const earlier = recent.reduce((n, r) => n + r.count, 0);
      // Confirmed deletions are the user's decision, applied: they never count towards a later hold.
      if (flags.get<boolean>(projectId, CONFIRMED) === true) return true;
      const admitted = () => {
        if (deletes > 0) recent.push({ at: now, count: deletes });
        return true;
      };
      // Measured against the files there were before the recent deletions.
      const total = deletes + ahead + earlier;
      const before = files + earlier;
      if (deletes === 0 || total < GUARD_MIN_FILES || total <= before * GUARD_SHARE) {
        if (flags.get(projectId, HELD) !== undefined) flags.delete(projectId, HELD);
        return admitted();
      }
      const held: HeldDeletes = { deletes: deletes + ahead, files: before, ...(earlier > 0 ? { recent: earlier } : {}) };
      flags.set(projectId, HELD, held);
      return false;
    },
    held: () => flags.get<HeldDeletes>(projectId, HELD) ?? null,
    confirm() {
      recent = [];
      flags.set(projectId, CONFIRMED, true);
      flags.delete(projectId, HELD);
    },
    caughtUp() {
      if (flags.get(projectId, CONFIRMED) !== undefined) flags.delete(projectId, CONFIRMED);
    },
  };
}
