import type { Database } from 'better-sqlite3';
import type { VersionRepository } from '../ports/metadata-repository.js';
import { run, toVersion, VERSION_COLUMNS, type VersionRow } from './sqlite-rows.js';

// `strata history --follow`: the rename a version was made by (metadata-repository.ts renameSource).
// Three indexed reads in one read transaction: the version, the project's commit before it
// (versions_by_project), the old path's version before the tombstone (versions_by_path).

type RenameMethods = Pick<VersionRepository, 'renameSource'>;

export function createSqliteRenames(db: Database): RenameMethods {
  const byId = db.prepare(`SELECT ${VERSION_COLUMNS} FROM versions WHERE version_id = ? AND project_id = ?`);
  const projectBefore = db.prepare(`SELECT ${VERSION_COLUMNS} FROM versions WHERE project_id = ? AND seq < ? ORDER BY seq DESC LIMIT 1`);
  const pathBefore = db.prepare(`SELECT ${VERSION_COLUMNS} FROM versions WHERE project_id = ? AND path = ? AND seq < ? ORDER BY seq DESC LIMIT 1`);
  const read = db.transaction((projectId: string, versionId: string) => {
    const made = byId.get(versionId, projectId) as VersionRow | undefined;
    if (made === undefined) return null;
    const tombstone = projectBefore.get(projectId, made.seq) as VersionRow | undefined;
    const source = tombstone === undefined ? undefined : (pathBefore.get(projectId, tombstone.path, tombstone.seq) as VersionRow | undefined);
    return isRename(made, tombstone, source) ? { tombstone: toVersion(tombstone!), source: toVersion(source!) } : null;
  });
  return { renameSource: (projectId, versionId) => run(() => read(projectId, versionId)) };
}

/** A rename's signature: a write of the old path's last content, right after its tombstone, by the same actor. */
export function isRename(made: VersionRow, tombstone: VersionRow | undefined, source: VersionRow | undefined): boolean {
  return (
    made.kind === 'write' &&
    made.content_hash !== null &&
    tombstone !== undefined &&
    tombstone.content_hash === null &&
    tombstone.path !== made.path &&
    tombstone.actor_id === made.actor_id &&
    source !== undefined &&
    source.content_hash === made.content_hash
  );
}
