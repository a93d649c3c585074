import type { ParentChange, SnapshotRepository, SnapshotRestorePlanItem } from '../ports/metadata-repository.js';
import type { DiffItem } from '../types.js';
import type { PgDatabase } from './pg-db.js';
import { Params, type SnapRef, snapRef, snapshotRowsSql, storable } from './pg-snapshot-view.js';
import { type EntryRow, toSnapshotEntry } from './sqlite-rows.js';
import { type CompareRow, planItem, sideA, sideB } from './sqlite-diff.js';

// Tree comparisons in one SQL statement each, as in sqlite-diff.ts: a full outer join on path (which
// Postgres has), filtered first on the integer version_seq (equal version => equal content, the common
// case when little changed) and only then on content hash and the flags (exec bit, symlink, dataset):
// a file and a link with the same bytes differ. Each side is a set (a snapshot's merged rows,
// pg-snapshot-view.ts, or the project's entries), joined by hash or merge: O(files) in the database,
// one round trip, and only the changed paths come back. The version rows are looked up per changed
// path (LATERAL … LIMIT 1 keeps the planner from joining them in): it cannot tell how few paths pass
// the version_seq filter, and chose to hash the project's whole history twice, a cost that grew with
// every version ever written instead of with the change.

/** `(path, version_seq)` rows of one side. */
type Side = (params: Params) => string;

const snapshotSide =
  (ref: SnapRef): Side =>
  (params) =>
    snapshotRowsSql(ref, params);
const currentSide =
  (projectId: string): Side =>
  (params) =>
    `SELECT path, version_seq FROM entries WHERE project_id = ${params.add(projectId)}::text`;

function compareSql(params: Params, a: Side, b: Side): string {
  return `
SELECT c.path,
  va.version_id AS a_version_id, va.content_hash AS a_hash, va.size AS a_size, va.executable AS a_executable, va.symlink AS a_symlink, va.dataset AS a_dataset,
  vb.version_id AS b_version_id, vb.content_hash AS b_hash, vb.size AS b_size, vb.timestamp AS b_timestamp, vb.executable AS b_executable, vb.symlink AS b_symlink, vb.dataset AS b_dataset
FROM (
  SELECT coalesce(x.path, y.path) AS path, x.version_seq AS av, y.version_seq AS bv
  FROM (${a(params)}) x FULL JOIN (${b(params)}) y ON y.path = x.path
  WHERE x.version_seq IS DISTINCT FROM y.version_seq
) c
LEFT JOIN LATERAL (SELECT * FROM versions v WHERE v.seq = c.av LIMIT 1) va ON true
LEFT JOIN LATERAL (SELECT * FROM versions v WHERE v.seq = c.bv LIMIT 1) vb ON true
WHERE va.content_hash IS DISTINCT FROM vb.content_hash OR va.executable IS DISTINCT FROM vb.executable
   OR va.symlink IS DISTINCT FROM vb.symlink OR va.dataset IS DISTINCT FROM vb.dataset
ORDER BY c.path`;
}


type ChangeRow = Omit<EntryRow, 'timestamp' | 'path' | 'version_id' | 'content_hash'> & {
  snapshot_id: string;
  path: string | null;
  version_id: string | null;
  content_hash: string | null;
};

export function createPgDiff(db: PgDatabase): Pick<SnapshotRepository, 'diff' | 'restorePlan' | 'changesFromParents'> {
  // Reads: the snapshot rows (immutable once made) and then one comparison statement, which sees one
  // consistent state of the current tree. One read-only transaction per call, no locks.
  const compare = (projectId: string, from: string, to: string | null) =>
    db.tx(
      async (tx) => {
        const a = snapshotSide(await snapRef(tx, projectId, from));
        const b = to === null ? currentSide(projectId) : snapshotSide(await snapRef(tx, projectId, to));
        const params = new Params();
        const sql = compareSql(params, a, b);
        return tx.query<CompareRow>(sql, params.values);
      },
      { readOnly: true },
    );

  const diff = async (projectId: string, from: string, to: string | null): Promise<DiffItem[]> =>
    (await compare(projectId, from, to)).map((row) => {
      const before = sideA(row);
      const after = sideB(row);
      return { path: row.path, change: before === null ? 'added' : after === null ? 'removed' : 'modified', before, after };
    });

  const restorePlan = async (projectId: string, snapshotId: string): Promise<SnapshotRestorePlanItem[]> =>
    (await compare(projectId, snapshotId, null)).map(planItem);

  // Many snapshots per statement: a chain walk (git export) asks for every snapshot in turn. One
  // statement (an array parameter, no chunking): the snapshots whose change set is known (both they
  // and their parent have a watermark) and their change rows, in path order.
  const changesFromParents = async (projectId: string, snapshotIds: string[]): Promise<Array<ParentChange[] | null>> => {
    const ids = snapshotIds.filter(storable);
    if (ids.length === 0) return snapshotIds.map(() => null);
    const rows = await db.query<ChangeRow>(
      `WITH known AS (
         SELECT s.snapshot_id, s.snap FROM snapshots s JOIN snapshots p ON p.snapshot_id = s.parent_id
         WHERE s.project_id = $1 AND s.snapshot_id = ANY($2::text[]) AND s.watermark IS NOT NULL AND p.watermark IS NOT NULL
       )
       SELECT k.snapshot_id, c.path, v.version_id, v.content_hash, v.size, v.executable, v.symlink, v.dataset
       FROM known k LEFT JOIN snapshot_changes c ON c.snap = k.snap LEFT JOIN versions v ON v.seq = c.version_seq
       ORDER BY k.snap, c.path`,
      [projectId, ids],
    );
    const bySnapshot = new Map<string, ParentChange[]>();
    for (const row of rows) {
      let changes = bySnapshot.get(row.snapshot_id);
      if (changes === undefined) {
        changes = [];
        bySnapshot.set(row.snapshot_id, changes);
      }
      // A snapshot with no change rows comes back once, with a NULL path (the LEFT JOIN).
      if (row.path === null) continue;
      changes.push({
        path: row.path,
        after: row.version_id === null ? null : toSnapshotEntry({ ...row, path: row.path, version_id: row.version_id, content_hash: row.content_hash! }),
      });
    }
    return snapshotIds.map((id) => {
      const changes = bySnapshot.get(id);
      // The same id asked twice gets equal but separate arrays.
      return changes === undefined ? null : [...changes];
    });
  };

  return { diff, restorePlan, changesFromParents };
}
