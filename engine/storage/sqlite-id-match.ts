import type { Database } from 'better-sqlite3';
import type { VersionRepository } from '../ports/metadata-repository.js';
import type { IdAbbreviation } from '../short-ids.js';
import { run } from './sqlite-rows.js';

// Short ids (engine/short-ids.ts): a project's version or snapshot ids by a prefix or an ending of
// their text. Ids are stored in canonical lowercase text, compared bytewise (BINARY).
//
// A prefix is an index range on the unique id index: `id >= prefix AND id < prefix || '~'` ('~' sorts
// after every character of an id). `+project_id` keeps the planner off the project index, which it
// preferred: it then read all of the project's rows (830 ms for a million versions, against under a
// millisecond for the range). An ending has no index: it reads the project's rows, 0.35 s per million
// versions here — what one lookup a person typed can afford; an index on reversed ids would cost
// every write for a rare command.

const LIMIT_MAX = 100;

export function createSqliteIdMatch(db: Database, table: 'versions' | 'snapshots'): Pick<VersionRepository, 'matchIds'> {
  const column = table === 'versions' ? 'version_id' : 'snapshot_id';
  const byPrefix = db.prepare(`SELECT ${column} FROM ${table} WHERE ${column} >= ? AND ${column} < ? AND +project_id = ? ORDER BY ${column} LIMIT ?`).pluck();
  const bySuffix = db.prepare(`SELECT ${column} FROM ${table} WHERE project_id = ? AND substr(${column}, ?) = ? ORDER BY ${column} LIMIT ?`).pluck();
  return {
    matchIds: (projectId: string, abbreviation: IdAbbreviation, limit: number) =>
      run(() => {
        const max = checkMatchLimit(limit);
        if ('prefix' in abbreviation) return byPrefix.all(abbreviation.prefix, `${abbreviation.prefix}~`, projectId, max) as string[];
        return bySuffix.all(projectId, -abbreviation.suffix.length, abbreviation.suffix, max) as string[];
      }),
  };
}

export function checkMatchLimit(limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > LIMIT_MAX) throw new TypeError(`limit must be an integer from 1 to ${LIMIT_MAX}, got ${limit}`);
  return limit;
}
