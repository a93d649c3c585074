import type { VersionRepository } from '../ports/metadata-repository.js';
import type { IdAbbreviation } from '../short-ids.js';
import type { PgDatabase } from './pg-db.js';
import { checkMatchLimit } from './sqlite-id-match.js';
import { hasNul } from './pg-sync-objects.js';

// Short ids on Postgres (sqlite-id-match.ts, ported). Id columns are COLLATE "C", so the prefix range
// `id >= prefix AND id < prefix || '~'` is a range on the unique id index (1.5 ms among a million
// versions here); an ending reads the project's rows, as on SQLite (0.56 s per million versions).

export function createPgIdMatch(db: PgDatabase, table: 'versions' | 'snapshots'): Pick<VersionRepository, 'matchIds'> {
  const column = table === 'versions' ? 'version_id' : 'snapshot_id';
  return {
    matchIds: async (projectId: string, abbreviation: IdAbbreviation, limit: number) => {
      const max = checkMatchLimit(limit);
      const text = 'prefix' in abbreviation ? abbreviation.prefix : abbreviation.suffix;
      if (hasNul(text)) return [];
      const rows =
        'prefix' in abbreviation
          ? await db.query<{ id: string }>(
              `SELECT ${column} AS id FROM ${table} WHERE ${column} >= $1::text AND ${column} < $2::text AND project_id = $3::text ORDER BY ${column} LIMIT $4`,
              [text, `${text}~`, projectId, max],
            )
          : await db.query<{ id: string }>(
              `SELECT ${column} AS id FROM ${table} WHERE project_id = $1::text AND right(${column}, $2::int) = $3::text ORDER BY ${column} LIMIT $4`,
              [projectId, text.length, text, max],
            );
      return rows.map((row) => row.id);
    },
  };
}
