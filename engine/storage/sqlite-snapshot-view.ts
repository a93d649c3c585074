import type { Database } from 'better-sqlite3';

// The entries a snapshot pins, whichever way it is stored (sqlite-migrations.ts, version 6): a
// checkpoint holds them in snapshot_entries; any other snapshot is its checkpoint's entries with the
// change sets of the snapshots from there to it applied in order. To read the latter, its entries
// are built once into a TEMP table of this connection with snapshot_entries' shape, so listings and
// diffs read it exactly as they read a checkpoint: O(files) once, then the same primary-key ranges.
// Snapshots never change once made (the versions they pin cannot be pruned), so a built view stays
// right for as long as the connection lives; the few most recent are kept.

const KEPT_VIEWS = 4;

export type SnapshotTable = 'snapshot_entries' | 'temp.snapshot_view';

export interface SnapshotView {
  /** where `snap`'s entries can be read as `(snap, path, version_seq)` rows keyed by snap */
  tableFor(snap: number): SnapshotTable;
}

export function createSnapshotView(db: Database): SnapshotView {
  db.exec(
    'CREATE TEMP TABLE IF NOT EXISTS snapshot_view (snap INTEGER NOT NULL, path TEXT NOT NULL, version_seq INTEGER NOT NULL, PRIMARY KEY (snap, path)) WITHOUT ROWID',
  );
  const baseOf = db.prepare('SELECT base, seq FROM snapshots WHERE snap = ?');
  const chain = db.prepare('SELECT snap FROM snapshots WHERE base = ? AND seq <= ? ORDER BY seq').pluck();
  const copyBase = db.prepare('INSERT INTO temp.snapshot_view (snap, path, version_seq) SELECT ?, path, version_seq FROM snapshot_entries WHERE snap = ?');
  const applySet = db.prepare(
    'INSERT OR REPLACE INTO temp.snapshot_view (snap, path, version_seq) SELECT ?, path, version_seq FROM snapshot_changes WHERE snap = ? AND version_seq IS NOT NULL',
  );
  const applyGone = db.prepare('DELETE FROM temp.snapshot_view WHERE snap = ? AND path IN (SELECT path FROM snapshot_changes WHERE snap = ? AND version_seq IS NULL)');
  const drop = db.prepare('DELETE FROM temp.snapshot_view WHERE snap = ?');
  const built: number[] = [];

  const build = db.transaction((snap: number, base: number, seq: number) => {
    drop.run(snap);
    copyBase.run(snap, base);
    for (const step of chain.all(base, seq) as number[]) {
      applySet.run(snap, step);
      applyGone.run(snap, step);
    }
  });

  return {
    tableFor(snap) {
      const row = baseOf.get(snap) as { base: number | null; seq: number } | undefined;
      if (row === undefined || row.base === null) return 'snapshot_entries';
      const at = built.indexOf(snap);
      if (at !== -1) built.splice(at, 1);
      else build(snap, row.base, row.seq);
      // Most recently used last: a diff of two snapshots needs both while it runs.
      built.push(snap);
      if (built.length > KEPT_VIEWS) drop.run(built.shift()!);
      return 'temp.snapshot_view';
    },
  };
}
