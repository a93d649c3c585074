import type { Database } from 'better-sqlite3';
import { StrataError } from '../errors.js';
import type { ImportStep, SnapshotCreate, SnapshotRepository } from '../ports/metadata-repository.js';
import type { Page, Snapshot, SnapshotEntry } from '../types.js';
import { checkLimit, decodePathCursor, decodeSeqCursor, encodeCursor } from './sqlite-cursor.js';
import { createSqliteDiff } from './sqlite-diff.js';
import { createSqliteIdMatch } from './sqlite-id-match.js';
import { createSqliteSnapshotSync } from './sqlite-snapshot-sync.js';
import { createSnapshotView } from './sqlite-snapshot-view.js';
import { createCommitter } from './sqlite-versions.js';
import { chainMoved, recordMoved } from '../chain-moved.js';
import { pathRange, statementCache } from './sqlite-range.js';
import { run, SNAPSHOT_COLUMNS, type SnapshotRow, snapshotAppender, toSnapshot, toSnapshotEntry } from './sqlite-rows.js';

/**
 * A snapshot is a checkpoint (a full copy of its entries) after this many built on the previous one,
 * or once their change sets together name more than a quarter of the files (but at least
 * MIN_CHAIN_CHANGES): reading a snapshot then costs at most its checkpoint plus a bounded chain.
 */
const MAX_CHAIN = 64;
const MIN_CHAIN_CHANGES = 4_096;

interface Totals {
  file_count: number;
  total_size: number;
}

export function createSqliteSnapshots(db: Database): SnapshotRepository {
  const tipRow = db.prepare(`SELECT ${SNAPSHOT_COLUMNS} FROM snapshots WHERE project_id = ? ORDER BY seq DESC LIMIT 1`);
  const byId = db.prepare(`SELECT ${SNAPSHOT_COLUMNS} FROM snapshots WHERE snapshot_id = ? AND project_id = ?`);
  const snapOf = db.prepare('SELECT snap FROM snapshots WHERE snapshot_id = ?').pluck();
  const page = db.prepare(
    `SELECT ${SNAPSHOT_COLUMNS} FROM snapshots WHERE project_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`,
  );
  const totals = db.prepare(
    'SELECT count(*) AS file_count, coalesce(sum(size), 0) AS total_size FROM entries WHERE project_id = ?',
  );
  const append = snapshotAppender(db);
  // The entries table is clustered on (project_id, path), so rows arrive in snapshot_entries' key
  // order and the insert appends to its b-tree instead of splitting pages at random.
  const pinEntries = db.prepare(
    'INSERT INTO snapshot_entries (snap, path, version_seq) SELECT ?, path, version_seq FROM entries WHERE project_id = ? ORDER BY path',
  );
  const maxSeq = db.prepare('SELECT max(seq) FROM versions WHERE project_id = ?').pluck();
  const watermarkOf = db.prepare('SELECT watermark FROM snapshots WHERE snap = ?').pluck();
  const setWatermark = db.prepare('UPDATE snapshots SET watermark = ? WHERE snap = ?');
  // The paths whose version differs from the parent's: the parent's version of a path is the last
  // change its chain made to it (snapshot_changes_by_path: the path's rows between the checkpoint and
  // the parent, newest first — snap numbers grow with seq), else what its checkpoint pins (pe).
  // 0 stands for "no version" (seqs start at 1). INDEXED BY: left to itself, SQLite walked every
  // version of the project (versions_by_path, for the DISTINCT) instead of the seq range — a cost that
  // grew with the project's history, per snapshot.
  const recordChanges = db.prepare(
    `INSERT INTO snapshot_changes (snap, path, version_seq)
     SELECT @snap, c.path, e.version_seq
     FROM (SELECT DISTINCT path FROM versions INDEXED BY versions_by_project WHERE project_id = @project AND seq > @from AND seq <= @to) c
     LEFT JOIN entries e ON e.project_id = @project AND e.path = c.path
     LEFT JOIN snapshot_entries pe ON pe.snap = @parentBase AND pe.path = c.path
     WHERE coalesce(e.version_seq, 0) IS NOT coalesce(
       (SELECT coalesce(sc.version_seq, 0) FROM snapshot_changes sc JOIN snapshots s ON s.snap = sc.snap
        WHERE sc.path = c.path AND sc.snap > @parentBase AND sc.snap <= @parentSnap AND s.base = @parentBase
        ORDER BY sc.snap DESC LIMIT 1),
       pe.version_seq, 0)`,
  );
  const versionsBetween = db.prepare('SELECT count(*) FROM versions INDEXED BY versions_by_project WHERE project_id = ? AND seq > ? AND seq <= ?').pluck();
  const insertChange = db.prepare('INSERT INTO snapshot_changes (snap, path, version_seq) VALUES (?, ?, ?)');
  const baseOf = db.prepare('SELECT base FROM snapshots WHERE snap = ?').pluck();
  const setBase = db.prepare('UPDATE snapshots SET base = ? WHERE snap = ?');
  const chainLength = db.prepare('SELECT count(*) FROM snapshots WHERE base = ?').pluck();
  const chainChangesOf = db.prepare('SELECT chain_changes FROM snapshots WHERE snap = ?').pluck();
  const setChainChanges = db.prepare('UPDATE snapshots SET chain_changes = ? WHERE snap = ?');
  const view = createSnapshotView(db);
  const tagsOf = db.prepare('SELECT tag FROM tags WHERE snap = ? ORDER BY tag').pluck();
  const insertTag = db.prepare('INSERT INTO tags (project_id, tag, snap) VALUES (?, ?, ?) ON CONFLICT DO NOTHING');
  const deleteTag = db.prepare('DELETE FROM tags WHERE project_id = ? AND tag = ?');
  const allTags = db.prepare(
    'SELECT t.tag, s.snapshot_id AS snapshotId FROM tags t JOIN snapshots s ON s.snap = t.snap WHERE t.project_id = ? ORDER BY t.tag',
  );
  const byTag = db.prepare(
    `SELECT ${SNAPSHOT_COLUMNS} FROM snapshots WHERE snap = (SELECT snap FROM tags WHERE project_id = ? AND tag = ?)`,
  );
  const prepared = statementCache(db);

  const withTags = (row: SnapshotRow | undefined): Snapshot | null =>
    row === undefined ? null : toSnapshot(row, tagsOf.all(row.snap) as string[]);

  /** What importChain knows already, so that a pushed chain of hundreds of snapshots queries less. */
  interface Known {
    /** the project's entry count and size */
    totals: Totals;
    /** the tip (null: none), when it is the snapshot the previous step created */
    tip?: Pick<SnapshotRow, 'snap' | 'snapshot_id' | 'seq'> | null;
    /** the paths this snapshot's step wrote, one version each (seq; null for a tombstone) */
    written: Array<{ path: string; seq: number | null }>;
  }

  const create = db.transaction((input: SnapshotCreate, known?: Known): Snapshot => {
    const tip = known?.tip === undefined ? (tipRow.get(input.projectId) as SnapshotRow | undefined) : (known.tip ?? undefined);
    const { file_count, total_size } = known?.totals ?? (totals.get(input.projectId) as Totals);
    const { snap, snapshot: created } = append(input, tip, { fileCount: file_count, totalSize: total_size });
    const watermark = (maxSeq.get(input.projectId) as number | null) ?? 0;
    setWatermark.run(watermark, snap);
    const parentWatermark = tip === undefined ? null : (watermarkOf.get(tip.snap) as number | null);
    // Built on the parent's checkpoint when the parent's changes are known (it has a watermark) and the
    // chain is still short: a snapshot costs its changes, not a copy of the tree.
    const parentBase = tip === undefined ? null : ((baseOf.get(tip.snap) as number | null) ?? tip.snap);
    let changes = 0;
    if (parentWatermark !== null) {
      const written = known?.written;
      // A step's versions are all the project got since its parent (no other writer came between):
      // its paths are the change set, and the query that works it out from the versions is not needed.
      if (written !== undefined && versionsBetween.get(input.projectId, parentWatermark, watermark) === written.length) {
        for (const { path, seq } of written) insertChange.run(snap, path, seq);
        changes = written.length;
      } else {
        changes = recordChanges.run({ snap, project: input.projectId, from: parentWatermark, to: watermark, parentBase, parentSnap: tip!.snap }).changes;
      }
    }
    // The change rows from the checkpoint to here, if this snapshot is built on it.
    const chained = parentBase === null || parentBase === tip!.snap ? changes : (chainChangesOf.get(tip!.snap) as number) + changes;
    const delta =
      parentWatermark !== null &&
      parentBase !== null &&
      (chainLength.get(parentBase) as number) < MAX_CHAIN &&
      chained <= Math.max(MIN_CHAIN_CHANGES, file_count / 4);
    if (delta) {
      setBase.run(parentBase, snap);
      setChainChanges.run(chained, snap);
    } else pinEntries.run(snap, input.projectId);
    return created;
  });

  const list = (projectId: string, options: { cursor?: string; limit: number }): Page<Snapshot> => {
    const limit = checkLimit(options.limit);
    const before = options.cursor === undefined ? Number.MAX_SAFE_INTEGER : decodeSeqCursor('snapshots', options.cursor);
    const rows = page.all(projectId, before, limit + 1) as SnapshotRow[];
    const result: Page<Snapshot> = { items: rows.slice(0, limit).map((row) => withTags(row)!) };
    if (rows.length > limit) result.nextCursor = encodeCursor('snapshots', rows[limit - 1]!.seq);
    return result;
  };

  const entries = (
    snapshotId: string,
    options: { prefix?: string; cursor?: string; limit: number },
  ): Page<SnapshotEntry> => {
    const limit = checkLimit(options.limit);
    const after = options.cursor === undefined ? undefined : decodePathCursor('snapshot-entries', options.cursor);
    const snap = snapOf.get(snapshotId) as number | undefined;
    if (snap === undefined) throw new StrataError('SNAPSHOT_NOT_FOUND', { details: { snapshotId } });
    const range = pathRange('se.path', options.prefix ?? '', after);
    const rows = prepared(
      `SELECT se.path, v.version_id, v.content_hash, v.size, v.executable, v.symlink, v.dataset FROM ${view.tableFor(snap)} se JOIN versions v ON v.seq = se.version_seq
       WHERE se.snap = ? AND ${range.sql} ORDER BY se.path LIMIT ?`,
    ).all(snap, ...range.params, limit + 1) as Array<{ path: string; version_id: string; content_hash: string; size: number; executable: number; symlink: number; dataset: number }>;
    const result: Page<SnapshotEntry> = { items: rows.slice(0, limit).map(toSnapshotEntry) };
    if (rows.length > limit) result.nextCursor = encodeCursor('snapshot-entries', rows[limit - 1]!.path);
    return result;
  };

  const commitOne = createCommitter(db);
  const importChain = db.transaction((projectId: string, steps: ImportStep[], expectedTip: string | null): Snapshot[] => {
    const current = tipRow.get(projectId) as SnapshotRow | undefined;
    if ((current?.snapshot_id ?? null) !== expectedTip) throw chainMoved(expectedTip, current?.snapshot_id ?? null);
    const created: Snapshot[] = [];
    // Kept up to date commit by commit: counting the project's entries for each snapshot was a scan
    // of every entry per pushed commit (bench/git-push.ts).
    const running = { ...(totals.get(projectId) as Totals) };
    let tip: Known['tip'] = current ?? null;
    for (const step of steps) {
      const written: Known['written'] = [];
      for (const commit of step.commits) {
        const { record } = commit;
        const result = commitOne(commit, (seq, previousSize) => {
          written.push({ path: record.path, seq: record.contentHash === null ? null : seq });
          if (previousSize !== null) {
            running.file_count -= 1;
            running.total_size -= previousSize;
          }
          if (record.contentHash !== null) {
            running.file_count += 1;
            running.total_size += record.size;
          }
        });
        // Throwing rolls the whole chain back: a push applies wholly or not at all.
        if (!result.ok) throw recordMoved(record.path);
      }
      if (step.snapshot.projectId !== projectId) throw new StrataError('INVALID_ARGUMENT', { message: 'a step of another project' });
      const snapshot = create(step.snapshot, { totals: running, written, tip });
      const snap = (snapOf.get(snapshot.snapshotId) as number | undefined)!;
      tip = { snap, snapshot_id: snapshot.snapshotId, seq: snapshot.seq };
      for (const tag of step.tags) {
        if (insertTag.run(projectId, tag, snap).changes === 0) throw new StrataError('TAG_TAKEN', { details: { tag } });
      }
      created.push({ ...snapshot, tags: [...step.tags].sort() });
    }
    return created;
  });

  const addTag = db.transaction((projectId: string, snapshotId: string, tag: string): void => {
    const row = byId.get(snapshotId, projectId) as SnapshotRow | undefined;
    if (row === undefined) throw new StrataError('SNAPSHOT_NOT_FOUND', { details: { snapshotId } });
    if (insertTag.run(projectId, tag, row.snap).changes === 0) {
      throw new StrataError('TAG_TAKEN', { details: { tag } });
    }
  });

  return {
    create: (snapshot) => run(() => create.immediate(snapshot)),
    get: (projectId, snapshotId) => run(() => withTags(byId.get(snapshotId, projectId) as SnapshotRow | undefined)),
    list: (projectId, options) => run(() => list(projectId, options)),
    tip: (projectId) => run(() => withTags(tipRow.get(projectId) as SnapshotRow | undefined)),
    entries: (snapshotId, options) => run(() => entries(snapshotId, options)),
    ...createSqliteIdMatch(db, 'snapshots'),
    ...createSqliteDiff(db, view),
    ...createSqliteSnapshotSync(db),
    importChain: (projectId, steps, expectedTip) => run(() => importChain.immediate(projectId, steps, expectedTip)),
    addTag: (projectId, snapshotId, tag) => run(() => addTag.immediate(projectId, snapshotId, tag)),
    removeTag: (projectId, tag) => run(() => deleteTag.run(projectId, tag).changes > 0),
    listTags: (projectId) => run(() => allTags.all(projectId) as Array<{ tag: string; snapshotId: string }>),
    resolveTag: (projectId, tag) => run(() => withTags(byTag.get(projectId, tag) as SnapshotRow | undefined)),
  };
}
