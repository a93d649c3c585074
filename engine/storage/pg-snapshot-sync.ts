// Snapshots that come through sync (issue 14): a workstation's snapshot pins the tree it had when it
// was taken, which on the server (other workstations' changes in between) or on another workstation
// is not the current tree. Such a snapshot is a checkpoint with exactly the given pins, appended to the
// chain like any other. It has no watermark, so neither it nor its child claims a change set:
// changesFromParents answers null for both and a chain walk diffs them in full.
import { StrataError } from '../errors.js';
import type { SnapshotRepository } from '../ports/metadata-repository.js';
import { isUniqueViolation, type PgDatabase } from './pg-db.js';
import { appendSnapshot, tipOf } from './pg-snapshot-create.js';
import { SNAPSHOT_WITH_TAGS, storable, type TaggedRow, toTagged } from './pg-snapshot-view.js';

type CreatePinned = SnapshotRepository['createPinned'];

export function createPgSnapshotSync(db: PgDatabase): Pick<SnapshotRepository, 'createPinned' | 'listAfter'> {
  const createPinned: CreatePinned = async (input, pins, options) => {
    const requireAll = options?.requireAll === true;
    for (const { path } of pins) {
      // Postgres text cannot hold NUL (SQLite's could); no version has such a path either.
      if (!storable(path)) throw new StrataError('INVALID_ARGUMENT', { message: 'A pinned path contains NUL', details: { field: 'path' } });
    }
    try {
      return await db.tx(
        async (tx) => {
          if ((await tx.one('SELECT 1 FROM snapshots WHERE snapshot_id = $1', [input.snapshotId])) !== undefined) {
            throw new StrataError('SNAPSHOT_ID_TAKEN', { details: { snapshotId: input.snapshotId } });
          }
          // Every pinned version in one statement (an array parameter), not one query per pin.
          const ids = [...new Set(pins.map((pin) => pin.versionId).filter(storable))];
          const rows = await tx.query<{ version_id: string; seq: number; size: number }>(
            'SELECT version_id, seq, size FROM versions WHERE project_id = $1 AND version_id = ANY($2::text[]) AND content_hash IS NOT NULL',
            [input.projectId, ids],
          );
          const live = new Map(rows.map((row) => [row.version_id, row]));
          const found: Array<{ path: string; seq: number; size: number }> = [];
          const missing: string[] = [];
          for (const { path, versionId } of pins) {
            const row = live.get(versionId);
            if (row === undefined) missing.push(path);
            else found.push({ path, seq: row.seq, size: row.size });
          }
          if (requireAll && missing.length > 0) {
            throw new StrataError('SNAPSHOT_PINS_MISSING', { details: { paths: missing.slice(0, 10), count: missing.length } });
          }
          const tip = await tipOf(tx, input.projectId);
          const totalSize = found.reduce((sum, entry) => sum + entry.size, 0);
          // No watermark: what it pins is not the tree the versions up to some point make.
          const { snap, snapshot } = await appendSnapshot(tx, input, tip, { fileCount: found.length, totalSize }, null);
          if (found.length > 0) {
            await tx.query('INSERT INTO snapshot_entries (snap, path, version_seq) SELECT $1::bigint, path, seq FROM unnest($2::text[], $3::bigint[]) AS p (path, seq)', [
              snap,
              found.map((entry) => entry.path),
              found.map((entry) => entry.seq),
            ]);
          }
          return { snapshot, missing };
        },
        { projects: [input.projectId] },
      );
    } catch (error) {
      // Ids are unique across projects, and another project's writer does not hold this lock: the
      // unique index decides a race the check above did not see.
      if (isUniqueViolation(error, 'snapshots_snapshot_id_key')) throw new StrataError('SNAPSHOT_ID_TAKEN', { details: { snapshotId: input.snapshotId } });
      throw error;
    }
  };

  return {
    createPinned,
    listAfter: async (projectId, afterSeq, limit) =>
      (await db.query<TaggedRow>(`SELECT ${SNAPSHOT_WITH_TAGS} FROM snapshots WHERE project_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [projectId, afterSeq, limit])).map(
        (row) => toTagged(row)!,
      ),
  };
}
