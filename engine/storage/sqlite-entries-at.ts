import type { Database, Statement } from 'better-sqlite3';
import { StrataError } from '../errors.js';
import type { VersionRepository } from '../ports/metadata-repository.js';
import type { Entry, Page } from '../types.js';
import { checkLimit, decodePathCursor, encodeCursor } from './sqlite-cursor.js';
import { pathRange } from './sqlite-range.js';
import { type EntryRow, run, toEntry } from './sqlite-rows.js';

// The tree as it was at a moment (the history browser's "as of"): the paths that had versions by then,
// a page of them in path order over the versions-by-path index, and for each its newest version by
// timestamp at or before the moment. Timestamps are ISO-8601 UTC text of one format, so text order is
// time order. Cost: every version of the examined paths up to the moment is read (no index by time):
// fine for a person looking at one directory, not meant for bulk use.

export function checkMoment(at: string): string {
  const ms = Date.parse(at);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(at) || Number.isNaN(ms)) {
    throw new StrataError('INVALID_ARGUMENT', { message: `'${at}' is not an ISO-8601 time (2026-11-26T09:30:00Z)`, details: { field: 'at' } });
  }
  return new Date(ms).toISOString();
}

export function createSqliteEntriesAt(db: Database): Pick<VersionRepository, 'entriesAt'> {
  const statements = new Map<string, Statement<unknown[]>>();
  const prepared = (sql: string) => {
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = db.prepare<unknown[]>(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
  return {
    entriesAt: (projectId, options) =>
      run(() => {
        const limit = checkLimit(options.limit);
        const at = checkMoment(options.at);
        const after = options.cursor === undefined ? undefined : decodePathCursor('entries', options.cursor);
        const range = pathRange('v.path', options.prefix, after);
        const paths = prepared(
          `SELECT DISTINCT v.path FROM versions v WHERE v.project_id = ? AND ${range.sql} AND v.timestamp <= ? ORDER BY v.path LIMIT ?`,
        )
          .pluck()
          .all(projectId, ...range.params, at, limit + 1) as string[];
        const newest = prepared(
          `SELECT path, version_id, content_hash, size, timestamp, executable, symlink, dataset FROM versions
           WHERE project_id = ? AND path = ? AND timestamp <= ? ORDER BY timestamp DESC, seq DESC LIMIT 1`,
        );
        const items: Entry[] = [];
        for (const path of paths.slice(0, limit)) {
          const row = newest.get(projectId, path, at) as EntryRow | undefined;
          if (row !== undefined && row.content_hash !== null) items.push(toEntry(row));
        }
        const page: Page<Entry> = { items };
        if (paths.length > limit) page.nextCursor = encodeCursor('entries', paths[limit - 1]!);
        return page;
      }),
  };
}
