import type { Database, Statement } from 'better-sqlite3';
import { StrataError } from '../errors.js';
import { prefixUpperBound } from './sqlite-cursor.js';

/**
 * The WHERE fragment and parameters selecting `column` values that start with `prefix`, after the
 * cursor position `after` when given, as an index range (never LIKE: '%' and '_' are legal in paths).
 */
export function pathRange(column: string, prefix: string, after: string | undefined): { sql: string; params: string[] } {
  if (after !== undefined && !after.startsWith(prefix)) {
    // A cursor from a listing with another prefix would otherwise widen this listing's range.
    throw new StrataError('INVALID_CURSOR', { details: { field: 'cursor', reason: 'cursor does not match the prefix' } });
  }
  const parts = after === undefined ? [`${column} >= ?`] : [`${column} > ?`];
  const params = [after ?? prefix];
  const upper = prefixUpperBound(prefix);
  if (upper !== null) {
    parts.push(`${column} < ?`);
    params.push(upper);
  }
  return { sql: parts.join(' AND '), params };
}

/** Prepared statements keyed by their text, for queries whose shape varies a little per call. */
export function statementCache(db: Database): (sql: string) => Statement {
  const cache = new Map<string, Statement>();
  return (sql) => {
    let statement = cache.get(sql);
    if (statement === undefined) {
      statement = db.prepare(sql);
      cache.set(sql, statement);
    }
    return statement;
  };
}
