// `strata history PATH --follow`: the path's versions, then, where the file was renamed to PATH, the
// old path's versions from before the rename, and so on back (as `git log --follow`). Which version a
// rename made is the server's answer (GET …/history/{versionId}/rename, engine renameOf): a rename
// is recorded as a tombstone at the old path and, next in the project's commit order, a write of the
// same content at the new one — what `strata mv`, watch mode and mount mode all commit.
//
// Only a version that begins a life of its path (the path's oldest version, or the first after a
// deletion) can have been made by a rename, so one question is asked per life, not per version.

import type { RenameInfo } from '../engine/commands/history.js';
import type { Page, VersionRecord } from '../engine/types.js';
import type { ApiClient } from './client.js';

/** A version as --follow lists it: the one a rename made says from where. */
export type FollowedVersion = VersionRecord & { renamedFrom?: string };

const PAGE = 1000;
/** A chain of renames longer than this is cut (and a cycle cannot loop). */
const MAX_RENAMES = 1000;

export async function followHistory(
  client: ApiClient,
  projectPath: (suffix: string) => string,
  path: string,
  limit: number | 'all',
): Promise<{ items: FollowedVersion[]; more: boolean }> {
  const items: FollowedVersion[] = [];
  const renameOf = async (version: VersionRecord) =>
    version.kind === 'write' ? (await client.json<RenameInfo>('GET', projectPath(`/history/${encodeURIComponent(version.versionId)}/rename`))).renamedFrom : null;
  let current = path;
  // On an old path: its versions newer than the rename's tombstone (a later file there) are not this file's.
  let after: string | null = null;
  for (let renames = 0; renames <= MAX_RENAMES; renames += 1) {
    let skipping = after !== null;
    let lifeStart: FollowedVersion | null = null;
    let renamedFrom: RenameInfo['renamedFrom'] = null;
    let cursor: string | undefined;
    scan: do {
      const page: Page<VersionRecord> = await client.json('GET', projectPath('/history'), { query: { path: current, limit: PAGE, cursor } });
      for (const version of page.items) {
        if (skipping) {
          skipping = version.versionId !== after;
          continue;
        }
        // a deletion ends the life that begins at the version listed last
        if (version.contentHash === null && lifeStart !== null) {
          renamedFrom = await renameOf(lifeStart);
          if (renamedFrom !== null) break scan;
        }
        if (limit !== 'all' && items.length >= limit) return { items, more: true };
        items.push(version);
        lifeStart = version;
      }
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    if (renamedFrom === null && lifeStart !== null) renamedFrom = await renameOf(lifeStart);
    if (renamedFrom === null || lifeStart === null) return { items, more: false };
    items[items.lastIndexOf(lifeStart)] = { ...lifeStart, renamedFrom: renamedFrom.path };
    current = renamedFrom.path;
    after = renamedFrom.tombstone.versionId;
  }
  return { items, more: true };
}
