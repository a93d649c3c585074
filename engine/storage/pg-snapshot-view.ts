import { StrataError } from '../errors.js';
import type { Snapshot } from '../types.js';
import type { Tx } from './pg-db.js';
import { prefixUpperBound } from './sqlite-cursor.js';
import { SNAPSHOT_COLUMNS, type SnapshotRow, toSnapshot } from './sqlite-rows.js';

// The entries a snapshot pins, whichever way it is stored (sqlite-migrations.ts, version 6; the
// Postgres schema has the same tables): a checkpoint (base NULL) holds them in snapshot_entries; any
// other snapshot is its checkpoint's entries with the change sets of the chain from there to it
// applied in order. SQLite builds the latter into a TEMP table kept per connection; here the pool
// hands each transaction any connection, so instead the merge is a subquery of the statement that
// reads it: a path's newest change in the chain (DISTINCT ON, at most chain_changes rows, bounded by
// the checkpoint rule in pg-snapshot-create.ts) wins over the checkpoint's row. The merge is computed
// per statement, costs the chain's changes plus the checkpoint's rows in range, and never goes stale.

/** $1…$n placeholders in the order their values are added (pathRange in sqlite-range.ts emits `?`). */
export class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** Where a snapshot's entries live: its own rows (base null) or its checkpoint's plus the chain's changes. */
export interface SnapRef {
  snap: number;
  base: number | null;
  seq: number;
}

/** A column filter (SQL using placeholders already added to the statement's Params). */
export type PathFilter = (column: string) => string;

/**
 * Postgres text cannot hold NUL, so no stored path has one; a bound that does (a prefix, a decoded
 * cursor) would make the statement fail. Over NUL-free strings, `> s`, `>= s` and `< s` for an `s`
 * with a NUL at i select the same as `>= s[0..i] + U+0001` (resp. `<`): nothing stored starts with
 * `s[0..i] + NUL`, and everything after it starts with at least `s[0..i] + U+0001`.
 */
function nulFree(bound: string): { value: string; exact: boolean } {
  const at = bound.indexOf('\u0000');
  return at === -1 ? { value: bound, exact: true } : { value: `${bound.slice(0, at)}\u0001`, exact: false };
}

/**
 * The filter selecting paths that start with `prefix`, after the cursor position `after` when given,
 * as an index range (never LIKE: '%' and '_' are legal in paths). Columns are COLLATE "C", byte order
 * on UTF-8, the code point order prefixUpperBound assumes.
 */
export function pgPathRange(params: Params, prefix: string, after: string | undefined): PathFilter {
  if (after !== undefined && !after.startsWith(prefix)) {
    // A cursor from a listing with another prefix would otherwise widen this listing's range.
    throw new StrataError('INVALID_CURSOR', { details: { field: 'cursor', reason: 'cursor does not match the prefix' } });
  }
  const lower = nulFree(after ?? prefix);
  const lowerSql = `${after !== undefined && lower.exact ? '>' : '>='} ${params.add(lower.value)}::text`;
  const upper = prefixUpperBound(prefix);
  const upperSql = upper === null ? null : `< ${params.add(nulFree(upper).value)}::text`;
  return (column) => (upperSql === null ? `${column} ${lowerSql}` : `${column} ${lowerSql} AND ${column} ${upperSql}`);
}

/**
 * A SELECT of the snapshot's `(path, version_seq)` rows, with `filter` applied to the path; with
 * `first` (a placeholder), only the first that many in path order, pushed into each branch so that a
 * page reads an index range and stops instead of sorting the whole tree.
 */
export function snapshotRowsSql(ref: SnapRef, params: Params, filter?: PathFilter, first?: string): string {
  const where = (column: string) => (filter === undefined ? '' : ` AND ${filter(column)}`);
  const cut = (sql: string, column: string) => (first === undefined ? sql : `(${sql} ORDER BY ${column} LIMIT ${first})`);
  if (ref.base === null) {
    return cut(`SELECT se.path, se.version_seq FROM snapshot_entries se WHERE se.snap = ${params.add(ref.snap)}::bigint${where('se.path')}`, 'se.path');
  }
  const base = params.add(ref.base);
  const seq = params.add(ref.seq);
  // The chain: the snapshots built on the checkpoint up to this one (seq order; their snap numbers are
  // all above the checkpoint's). A checkpoint row counts unless the chain changed its path: NOT EXISTS
  // (not NOT IN, whose subplan is only hashed while it fits in work_mem and otherwise rescans the chain
  // per row) is an anti join the planner runs by hash for a whole tree and by index probes
  // (snapshot_changes_by_path) for a page. A changed path's version is its newest change (NULL: gone).
  const changed = (column: string) =>
    `SELECT 1 FROM snapshot_changes sc JOIN snapshots c ON c.snap = sc.snap
     WHERE sc.path = ${column} AND sc.snap > ${base}::bigint AND c.base = ${base}::bigint AND c.seq <= ${seq}::bigint`;
  const kept = cut(
    `SELECT se.path, se.version_seq FROM snapshot_entries se
     WHERE se.snap = ${base}::bigint${where('se.path')} AND NOT EXISTS (${changed('se.path')})`,
    'se.path',
  );
  const newest = cut(
    `SELECT n.path, n.version_seq FROM (
       SELECT DISTINCT ON (sc.path) sc.path, sc.version_seq
       FROM snapshots c JOIN snapshot_changes sc ON sc.snap = c.snap
       WHERE c.base = ${base}::bigint AND c.seq <= ${seq}::bigint${where('sc.path')}
       ORDER BY sc.path, c.seq DESC
     ) n WHERE n.version_seq IS NOT NULL`,
    'n.path',
  );
  return `${kept}
  UNION ALL
  ${newest}`;
}

/** Snapshot columns plus its tags (sorted) in one row: one statement, so one consistent read. */
export const SNAPSHOT_WITH_TAGS = `${SNAPSHOT_COLUMNS}, ARRAY(SELECT t.tag FROM tags t WHERE t.snap = snapshots.snap ORDER BY t.tag) AS tags`;

export type TaggedRow = SnapshotRow & { tags: string[] };

export const toTagged = (row: TaggedRow | undefined): Snapshot | null => (row === undefined ? null : toSnapshot(row, row.tags));

/** A string Postgres cannot store (NUL) names nothing stored: lookups by it find nothing. */
export const storable = (value: string): boolean => !value.includes('\u0000');

/** The snapshot of the project (any project when `projectId` is null), or SNAPSHOT_NOT_FOUND. */
export async function snapRef(tx: Tx, projectId: string | null, snapshotId: string): Promise<SnapRef> {
  const row = storable(snapshotId)
    ? await tx.one<SnapRef>(
        projectId === null
          ? 'SELECT snap, base, seq FROM snapshots WHERE snapshot_id = $1'
          : 'SELECT snap, base, seq FROM snapshots WHERE snapshot_id = $1 AND project_id = $2',
        projectId === null ? [snapshotId] : [snapshotId, projectId],
      )
    : undefined;
  if (row === undefined) throw new StrataError('SNAPSHOT_NOT_FOUND', { details: { snapshotId } });
  return row;
}
