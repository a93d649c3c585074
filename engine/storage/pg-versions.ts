import type { VersionRepository, WriteConflict } from '../ports/metadata-repository.js';
import { pgCommit } from './pg-commit.js';
import { createPgEntriesAt } from './pg-entries-at.js';
import type { Entry, Page, VersionRecord } from '../types.js';
import { type PgDatabase, type Prepared, prepared } from './pg-db.js';
import { createPgIdMatch } from './pg-id-match.js';
import { createPgRenames } from './pg-renames.js';
import { createPgPrune } from './pg-prune.js';
import { createPgSyncObjects, hasNul } from './pg-sync-objects.js';
import { checkLimit, decodePathCursor, decodeSeqCursor, encodeCursor } from './sqlite-cursor.js';
import { pathRange } from './sqlite-range.js';
import { type EntryRow, toEntry, toVersion, VERSION_COLUMNS, type VersionRow } from './sqlite-rows.js';

const ENTRY_COLUMNS = 'path, version_id, content_hash, size, timestamp, executable, symlink, dataset';

/** The $n form of pathRange (sqlite-range.ts), numbering its placeholders from `first`. */
function pgPathRange(column: string, prefix: string, after: string | undefined, first: number): { sql: string; params: string[] } {
  const range = pathRange(column, prefix, after);
  let n = first;
  return { sql: range.sql.replace(/\?/g, () => `$${n++}::text`), params: range.params };
}

/** The check every write makes, prepared for each form of its range (a handful: pathRange's shapes). */
const writeConflictStatements = new Map<string, Prepared>();
function writeConflictSql(rangeSql: string): Prepared {
  let statement = writeConflictStatements.get(rangeSql);
  if (statement === undefined) {
    statement = prepared(`SELECT EXISTS (SELECT 1 FROM entries WHERE project_id = $1::text AND ${rangeSql}) AS directory,
                (SELECT path FROM entries WHERE project_id = $1::text AND path = ANY($2::text[]) ORDER BY path LIMIT 1) AS ancestor`);
    writeConflictStatements.set(rangeSql, statement);
  }
  return statement;
}

export function createPgVersions(db: PgDatabase): VersionRepository {
  const isDirectory = async (projectId: string, dirPath: string): Promise<boolean> => {
    if (hasNul(dirPath)) return false;
    if (dirPath === '') return (await db.one('SELECT 1 FROM entries WHERE project_id = $1::text LIMIT 1', [projectId])) !== undefined;
    // 'dir/' < every path below dir < 'dir0' ('0' follows '/'): an index range, no LIKE.
    const range = pgPathRange('path', `${dirPath}/`, undefined, 2);
    return (await db.one(`SELECT 1 FROM entries WHERE project_id = $1::text AND ${range.sql} LIMIT 1`, [projectId, ...range.params])) !== undefined;
  };

  return {
    commit: (commits, options) => pgCommit(db, commits, options),
    get: async (projectId, versionId) => {
      if (hasNul(versionId)) return null;
      const row = await db.one<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM versions WHERE version_id = $1::text AND project_id = $2::text`, [versionId, projectId]);
      return row === undefined ? null : toVersion(row);
    },
    history: async (projectId, query) => {
      const limit = checkLimit(query.limit);
      const before = query.cursor === undefined ? Number.MAX_SAFE_INTEGER : decodeSeqCursor('history', query.cursor);
      if (hasNul(query.path)) return { items: [] };
      const params = [projectId, before, limit + 1, ...(query.path === undefined ? [] : [query.path])];
      const rows = await db.query<VersionRow>(
        `SELECT ${VERSION_COLUMNS} FROM versions WHERE project_id = $1::text ${query.path === undefined ? '' : 'AND path = $4::text'}
         AND seq < $2::bigint ORDER BY seq DESC LIMIT $3::bigint`,
        params,
      );
      const page: Page<VersionRecord> = { items: rows.slice(0, limit).map(toVersion) };
      if (rows.length > limit) page.nextCursor = encodeCursor('history', rows[limit - 1]!.seq);
      return page;
    },
    getEntry: async (projectId, path) => {
      if (hasNul(path)) return null;
      const row = await db.one<EntryRow>(`SELECT ${ENTRY_COLUMNS} FROM entries WHERE project_id = $1::text AND path = $2::text`, [projectId, path]);
      return row === undefined ? null : toEntry(row);
    },
    listEntries: async (projectId, options) => {
      const limit = checkLimit(options.limit);
      const after = options.cursor === undefined ? undefined : decodePathCursor('entries', options.cursor);
      pathRange('path', options.prefix, after); // a cursor of another prefix is INVALID_CURSOR, NUL or not
      if (hasNul(options.prefix)) return { items: [] };
      // No stored path contains NUL, so for a cursor s + NUL + t (s without NUL) "path > cursor" selects
      // exactly the paths "path > s" does: the cut is exact, and keeps NUL out of the statement.
      const range = pgPathRange('path', options.prefix, after?.split('\u0000')[0], 2);
      // path is COLLATE "C": byte order, the order of the cursor and of prefixUpperBound's range.
      const rows = await db.query<EntryRow>(
        `SELECT ${ENTRY_COLUMNS} FROM entries WHERE project_id = $1::text AND ${range.sql} ORDER BY path LIMIT $${range.params.length + 2}::bigint`,
        [projectId, ...range.params, limit + 1],
      );
      const page: Page<Entry> = { items: rows.slice(0, limit).map(toEntry) };
      if (rows.length > limit) page.nextCursor = encodeCursor('entries', rows[limit - 1]!.path);
      return page;
    },
    isDirectory,
    writeConflict: async (projectId, path): Promise<WriteConflict | null> => {
      if (path === '') return (await isDirectory(projectId, path)) ? { kind: 'directory' } : null;
      const ancestors: string[] = [];
      for (let slash = path.indexOf('/'); slash !== -1; slash = path.indexOf('/', slash + 1)) ancestors.push(path.slice(0, slash));
      // One round trip for the check every write makes. The ancestor nearest the root wins, as in the
      // SQLite walk: a prefix sorts before its extensions. Nothing stored lies below a path with NUL.
      const range = hasNul(path) ? { sql: 'false', params: [] } : pgPathRange('path', `${path}/`, undefined, 3);
      const row = (await db.one<{ directory: boolean; ancestor: string | null }>(writeConflictSql(range.sql), [
        projectId,
        ancestors.filter((ancestor) => !hasNul(ancestor)),
        ...range.params,
      ]))!;
      if (row.directory) return { kind: 'directory' };
      return row.ancestor === null ? null : { kind: 'file-ancestor', ancestor: row.ancestor };
    },
    countVersions: async (projectId) => (await db.one<{ count: number }>('SELECT count(*) AS count FROM versions WHERE project_id = $1::text', [projectId]))!.count,
    ...createPgIdMatch(db, 'versions'),
    ...createPgRenames(db),
    ...createPgEntriesAt(db),
    ...createPgPrune(db),
    ...createPgSyncObjects(db),
  };
}
