import type { VersionRepository } from '../ports/metadata-repository.js';
import type { Entry, Page } from '../types.js';
import type { PgDatabase } from './pg-db.js';
import { hasNul } from './pg-sync-objects.js';
import { checkLimit, decodePathCursor, encodeCursor } from './sqlite-cursor.js';
import { checkMoment } from './sqlite-entries-at.js';
import { pathRange } from './sqlite-range.js';
import { type EntryRow, toEntry } from './sqlite-rows.js';

// The tree as it was at a moment, on Postgres: the same reading as sqlite-entries-at.ts (which says
// why), in one statement: a page of paths, then each one's newest version by then (LATERAL).

export function createPgEntriesAt(db: PgDatabase): Pick<VersionRepository, 'entriesAt'> {
  return {
    entriesAt: async (projectId, options) => {
      const limit = checkLimit(options.limit);
      const at = checkMoment(options.at);
      const after = options.cursor === undefined ? undefined : decodePathCursor('entries', options.cursor);
      const range = pathRange('v.path', options.prefix, after);
      if (hasNul(options.prefix)) return { items: [] };
      let n = 3;
      const rangeSql = range.sql.replace(/\?/g, () => `$${n++}::text`);
      const rows = await db.query<EntryRow & { examined: string }>(
        `WITH paths AS (
           SELECT DISTINCT v.path FROM versions v WHERE v.project_id = $1::text AND ${rangeSql} AND v.timestamp <= $2::text ORDER BY v.path LIMIT $${n}::bigint
         )
         SELECT p.path AS examined, e.* FROM paths p
         LEFT JOIN LATERAL (
           SELECT path, version_id, content_hash, size, timestamp, executable, symlink, dataset FROM versions
           WHERE project_id = $1::text AND path = p.path AND timestamp <= $2::text ORDER BY timestamp DESC, seq DESC LIMIT 1
         ) e ON true
         ORDER BY p.path`,
        [projectId, at, ...range.params, limit + 1],
      );
      const items: Entry[] = rows.slice(0, limit).filter((row) => row.content_hash !== null).map(toEntry);
      const page: Page<Entry> = { items };
      if (rows.length > limit) page.nextCursor = encodeCursor('entries', rows[limit - 1]!.examined);
      return page;
    },
  };
}
