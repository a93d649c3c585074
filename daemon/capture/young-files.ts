// Which deletions the mass-delete guard leaves out: files the user made in the last hour. The guard is
// there for a tool or an unmounted drive wiping the files that carry a project's history; deleting a
// build or scratch tree made minutes ago (`tar x`, `make`, a simulation's output, then `rm -rf` of it)
// is ordinary work, and it tripped the guard: `rm -rf` of 10,000 files written a minute earlier was
// refused on a mount after ~3,200, and watch mode stopped recording every deletion (issue 39 item 6).
//
// The rule: a file is young when its path's history since it last appeared there (its newest
// versions, back to a deletion or to the start) began less than YOUNG_MS ago. Young files never count
// towards the guard; an old file edited a minute ago is still old. An unmounted drive removes the old
// files too, and trips it as before.

import type { Engine } from '../../engine/engine-api.js';

export const YOUNG_MS = 60 * 60_000;

/** STRATA_GUARD_YOUNG_MS overrides YOUNG_MS (0: every file counts, as before this rule). */
function youngMs(): number {
  const set = Number(process.env['STRATA_GUARD_YOUNG_MS']);
  return process.env['STRATA_GUARD_YOUNG_MS'] !== undefined && Number.isFinite(set) && set >= 0 ? set : YOUNG_MS;
}
/** Versions looked at per path: a path rewritten this often within the hour is scratch whatever came before. */
const LOOK_BACK = 20;

/** Whether `path` is young at `nowMs` (see above). A path whose history cannot be read counts as old. */
export async function isYoung(engine: Engine, projectId: string, path: string, nowMs: number): Promise<boolean> {
  const window = youngMs();
  if (window === 0) return false;
  const cutoff = nowMs - window;
  let page: Awaited<ReturnType<Engine['history']>>;
  try {
    page = await engine.history({ projectId, path, limit: LOOK_BACK });
  } catch {
    return false;
  }
  // Newest first: the current file's versions, then (maybe) the deletion before it appeared.
  for (const version of page.items) {
    if (version.kind === 'delete') return true;
    if (Date.parse(version.timestamp) < cutoff) return false;
  }
  return true;
}

/** How many of `paths` are young (each looked up; for a burst the guard would otherwise trip on). */
export async function countYoung(engine: Engine, projectId: string, paths: Iterable<string>, nowMs: number): Promise<number> {
  let young = 0;
  for (const path of paths) if (await isYoung(engine, projectId, path, nowMs)) young += 1;
  return young;
}
