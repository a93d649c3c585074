// Snapshots that come through sync (issue 14): a workstation's snapshot pins the tree it had when it
// was taken, which on the server (other workstations' changes in between) or on another workstation
// is not the current tree. Such a snapshot is a checkpoint with exactly the given pins, appended to the
// chain like any other. It has no watermark, so neither it nor its child claims a change set:
// changesFromParents answers null for both and a chain walk diffs them in full.
import type { Database } from 'better-sqlite3';
import { StrataError } from '../errors.js';
import type { SnapshotRepository } from '../ports/metadata-repository.js';
import { run, SNAPSHOT_COLUMNS, type SnapshotRow, snapshotAppender, toSnapshot } from './sqlite-rows.js';

export function createSqliteSnapshotSync(db: Database): Pick<SnapshotRepository, 'createPinned' | 'listAfter'> {
  const tipRow = db.prepare('SELECT snapshot_id, seq FROM snapshots WHERE project_id = ? ORDER BY seq DESC LIMIT 1');
  const version = db.prepare('SELECT seq, size FROM versions WHERE version_id = ? AND project_id = ? AND content_hash IS NOT NULL');
  const append = snapshotAppender(db);
  const pin = db.prepare('INSERT INTO snapshot_entries (snap, path, version_seq) VALUES (?, ?, ?)');
  const after = db.prepare(`SELECT ${SNAPSHOT_COLUMNS} FROM snapshots WHERE project_id = ? AND seq > ? ORDER BY seq LIMIT ?`);
  const tagsOf = db.prepare('SELECT tag FROM tags WHERE snap = ? ORDER BY tag').pluck();
  const idTaken = db.prepare('SELECT 1 FROM snapshots WHERE snapshot_id = ?').pluck();

  const createPinned = db.transaction((input: Parameters<SnapshotRepository['createPinned']>[0], pins: Array<{ path: string; versionId: string }>, requireAll: boolean) => {
    if (idTaken.get(input.snapshotId) !== undefined) throw new StrataError('SNAPSHOT_ID_TAKEN', { details: { snapshotId: input.snapshotId } });
    const found: Array<{ path: string; seq: number; size: number }> = [];
    const missing: string[] = [];
    for (const { path, versionId } of pins) {
      const row = version.get(versionId, input.projectId) as { seq: number; size: number } | undefined;
      if (row === undefined) missing.push(path);
      else found.push({ path, seq: row.seq, size: row.size });
    }
    if (requireAll && missing.length > 0) {
      throw new StrataError('SNAPSHOT_PINS_MISSING', { details: { paths: missing.slice(0, 10), count: missing.length } });
    }
    found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    const tip = tipRow.get(input.projectId) as { snapshot_id: string; seq: number } | undefined;
    const totalSize = found.reduce((sum, entry) => sum + entry.size, 0);
    const { snap, snapshot } = append(input, tip, { fileCount: found.length, totalSize });
    for (const entry of found) pin.run(snap, entry.path, entry.seq);
    return { snapshot, missing };
  });

  return {
    createPinned: (input, pins, options) => run(() => createPinned.immediate(input, pins, options?.requireAll === true)),
    listAfter: (projectId, afterSeq, limit) =>
      run(() => (after.all(projectId, afterSeq, limit) as SnapshotRow[]).map((row) => toSnapshot(row, tagsOf.all(row.snap) as string[]))),
  };
}
