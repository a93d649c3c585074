import type { VersionRepository } from '../ports/metadata-repository.js';
import type { PgDatabase } from './pg-db.js';
import { hasNul } from './pg-sync-objects.js';
import { isRename } from './sqlite-renames.js';
import { toVersion, VERSION_COLUMNS, type VersionRow } from './sqlite-rows.js';

// renameSource on Postgres (sqlite-renames.ts, ported): the same three indexed reads, in one
// transaction so a concurrent prune cannot show half of a rename. Within a project, seq order is
// commit order (writers of a project hold its lock), whatever other projects commit in between.

export function createPgRenames(db: PgDatabase): Pick<VersionRepository, 'renameSource'> {
  return {
    renameSource: async (projectId, versionId) => {
      if (hasNul(versionId)) return null;
      return db.tx(async (tx) => {
        const made = await tx.one<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM versions WHERE version_id = $1::text AND project_id = $2::text`, [versionId, projectId]);
        if (made === undefined) return null;
        const tombstone = await tx.one<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM versions WHERE project_id = $1::text AND seq < $2::bigint ORDER BY seq DESC LIMIT 1`, [
          projectId,
          made.seq,
        ]);
        const source =
          tombstone === undefined
            ? undefined
            : await tx.one<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM versions WHERE project_id = $1::text AND path = $2::text AND seq < $3::bigint ORDER BY seq DESC LIMIT 1`, [
                projectId,
                tombstone.path,
                tombstone.seq,
              ]);
        return isRename(made, tombstone, source) ? { tombstone: toVersion(tombstone!), source: toVersion(source!) } : null;
      }, { readOnly: true });
    },
  };
}
