import type { Database } from 'better-sqlite3';
import { StrataError } from '../errors.js';
import type { ParentChange, SnapshotRepository, SnapshotRestorePlanItem } from '../ports/metadata-repository.js';
import type { DiffItem, SnapshotEntry } from '../types.js';
import { statementCache } from './sqlite-range.js';
import type { SnapshotTable, SnapshotView } from './sqlite-snapshot-view.js';
import { type EntryRow, run, toEntry, toSnapshotEntry } from './sqlite-rows.js';

const IN_CHUNK = 500;
const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ');

// Tree comparisons in one SQL statement each: a full outer join on path (SQLite has none, so a LEFT
// JOIN plus the right side's orphans), filtered first on the integer version_seq (equal version =>
// equal content, the common case when little changed) and only then on content hash and the flags
// (exec bit, symlink, dataset): a file and a link with the same bytes differ. Each side is a
// primary-key range (snapshot_entries by snap, entries by project), so this is one index probe per
// path and a sort of the changed paths only. Measured: ~0.2 s for 100,000 unchanged paths.

interface Side {
  table: SnapshotTable | 'entries';
  key: 'snap' | 'project_id';
  param: '@from' | '@to';
}

const snapshotSide = (table: SnapshotTable, param: Side['param']): Side => ({ table, key: 'snap', param });
const currentSide: Side = { table: 'entries', key: 'project_id', param: '@to' };

function compareSql(a: Side, b: Side): string {
  return `
SELECT c.path,
  va.version_id AS a_version_id, va.content_hash AS a_hash, va.size AS a_size, va.executable AS a_executable, va.symlink AS a_symlink, va.dataset AS a_dataset,
  vb.version_id AS b_version_id, vb.content_hash AS b_hash, vb.size AS b_size, vb.timestamp AS b_timestamp, vb.executable AS b_executable, vb.symlink AS b_symlink, vb.dataset AS b_dataset
FROM (
  SELECT x.path AS path, x.version_seq AS av, y.version_seq AS bv
  FROM ${a.table} x LEFT JOIN ${b.table} y ON y.${b.key} = ${b.param} AND y.path = x.path
  WHERE x.${a.key} = ${a.param} AND (y.version_seq IS NULL OR y.version_seq <> x.version_seq)
  UNION ALL
  SELECT y.path, NULL, y.version_seq FROM ${b.table} y
  WHERE y.${b.key} = ${b.param}
    AND NOT EXISTS (SELECT 1 FROM ${a.table} x WHERE x.${a.key} = ${a.param} AND x.path = y.path)
) c
LEFT JOIN versions va ON va.seq = c.av
LEFT JOIN versions vb ON vb.seq = c.bv
WHERE va.content_hash IS NOT vb.content_hash OR va.executable IS NOT vb.executable OR va.symlink IS NOT vb.symlink OR va.dataset IS NOT vb.dataset
ORDER BY c.path`;
}

export interface CompareRow {
  path: string;
  a_version_id: string | null;
  a_hash: string | null;
  a_size: number | null;
  a_executable: number | null;
  a_symlink: number | null;
  a_dataset: number | null;
  b_version_id: string | null;
  b_hash: string | null;
  b_size: number | null;
  b_timestamp: string | null;
  b_executable: number | null;
  b_symlink: number | null;
  b_dataset: number | null;
}

export function sideA(row: CompareRow): SnapshotEntry | null {
  return row.a_version_id === null
    ? null
    : toSnapshotEntry({ path: row.path, version_id: row.a_version_id, content_hash: row.a_hash!, size: row.a_size!, executable: row.a_executable!, symlink: row.a_symlink!, dataset: row.a_dataset! });
}

/** A restore plan's item from a comparison of the snapshot (side a) with the current tree (side b). */
export function planItem(row: CompareRow): SnapshotRestorePlanItem {
  const current =
    row.b_version_id === null
      ? null
      : toEntry({
          path: row.path,
          version_id: row.b_version_id,
          content_hash: row.b_hash!,
          size: row.b_size!,
          timestamp: row.b_timestamp!,
          executable: row.b_executable!,
          symlink: row.b_symlink!,
          dataset: row.b_dataset!,
        });
  return { path: row.path, current, pinned: sideA(row) };
}

export function sideB(row: CompareRow): SnapshotEntry | null {
  return row.b_version_id === null
    ? null
    : toSnapshotEntry({ path: row.path, version_id: row.b_version_id, content_hash: row.b_hash!, size: row.b_size!, executable: row.b_executable!, symlink: row.b_symlink!, dataset: row.b_dataset! });
}


export function createSqliteDiff(db: Database, view: SnapshotView): Pick<SnapshotRepository, 'diff' | 'restorePlan' | 'changesFromParents'> {
  const prepared = statementCache(db);
  const snapOf = db.prepare('SELECT snap FROM snapshots WHERE snapshot_id = ? AND project_id = ?').pluck();
  // Both sides first (a snapshot built on a checkpoint is materialized by tableFor), then the query.
  const betweenSnapshots = (from: number, to: number) =>
    prepared(compareSql(snapshotSide(view.tableFor(from), '@from'), snapshotSide(view.tableFor(to), '@to'))).all({ from, to });
  const againstCurrent = (from: number, projectId: string) => prepared(compareSql(snapshotSide(view.tableFor(from), '@from'), currentSide)).all({ from, to: projectId });

  const snap = (projectId: string, snapshotId: string): number => {
    const found = snapOf.get(snapshotId, projectId) as number | undefined;
    if (found === undefined) throw new StrataError('SNAPSHOT_NOT_FOUND', { details: { snapshotId } });
    return found;
  };

  const diff = (projectId: string, from: string, to: string | null): DiffItem[] => {
    const fromSnap = snap(projectId, from);
    const rows = (
      to === null ? againstCurrent(fromSnap, projectId) : betweenSnapshots(fromSnap, snap(projectId, to))
    ) as CompareRow[];
    return rows.map((row) => {
      const before = sideA(row);
      const after = sideB(row);
      return { path: row.path, change: before === null ? 'added' : after === null ? 'removed' : 'modified', before, after };
    });
  };

  const restorePlan = (projectId: string, snapshotId: string): SnapshotRestorePlanItem[] => {
    const rows = againstCurrent(snap(projectId, snapshotId), projectId) as CompareRow[];
    return rows.map(planItem);
  };

  // Many snapshots per statement: a chain walk (git export) asks for every snapshot in turn, and one
  // query per snapshot cost ~100 µs each at 10,000 files, more than the changes themselves.
  const changesFromParents = (projectId: string, snapshotIds: string[]): Array<ParentChange[] | null> => {
    const result: Array<ParentChange[] | null> = snapshotIds.map(() => null);
    for (let start = 0; start < snapshotIds.length; start += IN_CHUNK) {
      const ids = snapshotIds.slice(start, start + IN_CHUNK);
      const marks = placeholders(ids.length);
      const links = prepared(
        `SELECT s.snapshot_id, s.snap, s.watermark AS child_mark, p.watermark AS parent_mark
         FROM snapshots s JOIN snapshots p ON p.snapshot_id = s.parent_id WHERE s.project_id = ? AND s.snapshot_id IN (${marks})`,
      ).all(projectId, ...ids) as Array<{ snapshot_id: string; snap: number; child_mark: number | null; parent_mark: number | null }>;
      const bySnap = new Map<number, ParentChange[]>();
      for (const link of links) if (link.child_mark !== null && link.parent_mark !== null) bySnap.set(link.snap, []);
      if (bySnap.size > 0) {
        const rows = prepared(
          `SELECT c.snap, c.path, v.version_id, v.content_hash, v.size, v.executable, v.symlink, v.dataset
           FROM snapshot_changes c LEFT JOIN versions v ON v.seq = c.version_seq
           WHERE c.snap IN (${placeholders(bySnap.size)}) ORDER BY c.snap, c.path`,
        ).all(...bySnap.keys()) as Array<Omit<EntryRow, 'timestamp' | 'version_id' | 'content_hash'> & { snap: number; version_id: string | null; content_hash: string | null }>;
        for (const row of rows) {
          bySnap.get(row.snap)!.push({
            path: row.path,
            after: row.version_id === null ? null : toSnapshotEntry({ ...row, version_id: row.version_id, content_hash: row.content_hash! }),
          });
        }
      }
      const index = new Map(ids.map((id, k) => [id, start + k]));
      for (const link of links) {
        const changes = bySnap.get(link.snap);
        if (changes !== undefined) result[index.get(link.snapshot_id)!] = changes;
      }
    }
    return result;
  };

  return {
    changesFromParents: (projectId, snapshotIds) => run(() => changesFromParents(projectId, snapshotIds)),
    diff: (projectId, from, to) => run(() => diff(projectId, from, to)),
    restorePlan: (projectId, snapshotId) => run(() => restorePlan(projectId, snapshotId)),
  };
}
