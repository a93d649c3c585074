import { StrataError } from '../errors.js';
import type { ImportStep, SnapshotRepository } from '../ports/metadata-repository.js';
import type { Page, Snapshot, SnapshotEntry } from '../types.js';
import type { PgDatabase, Tx } from './pg-db.js';
import { createPgDiff } from './pg-diff.js';
import { createPgIdMatch } from './pg-id-match.js';
import { chainMoved, recordMoved } from '../chain-moved.js';
import { createSnapshot, type Known, type Totals, tipOf } from './pg-snapshot-create.js';
import { createPgSnapshotSync } from './pg-snapshot-sync.js';
import { Params, pgPathRange, SNAPSHOT_WITH_TAGS, snapRef, snapshotRowsSql, storable, type TaggedRow, toTagged } from './pg-snapshot-view.js';
import { pgCommitOne } from './pg-commit.js';
import { checkLimit, decodePathCursor, decodeSeqCursor, encodeCursor } from './sqlite-cursor.js';
import { type EntryRow, toSnapshotEntry } from './sqlite-rows.js';

// The snapshot repository on Postgres, the port of sqlite-snapshots.ts: same tables, same storage
// (checkpoints plus change sets, pg-snapshot-create.ts), same answers. Every method is one
// transaction; every method that writes a project's rows holds that project's advisory lock
// (pg-db.ts), which every writer of the project takes too: across replicas that is what keeps the
// chain linear and makes a git push apply exactly once.

type PinRow = Omit<EntryRow, 'timestamp'>;

export function createPgSnapshots(db: PgDatabase): SnapshotRepository {
  const locked = <T>(projectId: string, fn: (tx: Tx) => Promise<T>): Promise<T> => db.tx(fn, { projects: [projectId] });

  const one = async (sql: string, params: unknown[]): Promise<Snapshot | null> => toTagged(await db.one<TaggedRow>(sql, params));

  const list = async (projectId: string, options: { cursor?: string; limit: number }): Promise<Page<Snapshot>> => {
    const limit = checkLimit(options.limit);
    const before = options.cursor === undefined ? Number.MAX_SAFE_INTEGER : decodeSeqCursor('snapshots', options.cursor);
    const rows = await db.query<TaggedRow>(`SELECT ${SNAPSHOT_WITH_TAGS} FROM snapshots WHERE project_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`, [projectId, before, limit + 1]);
    const result: Page<Snapshot> = { items: rows.slice(0, limit).map((row) => toTagged(row)!) };
    if (rows.length > limit) result.nextCursor = encodeCursor('snapshots', rows[limit - 1]!.seq);
    return result;
  };

  const entries = async (snapshotId: string, options: { prefix?: string; cursor?: string; limit: number }): Promise<Page<SnapshotEntry>> => {
    const limit = checkLimit(options.limit);
    const after = options.cursor === undefined ? undefined : decodePathCursor('snapshot-entries', options.cursor);
    const rows = await db.tx(
      async (tx) => {
        const ref = await snapRef(tx, null, snapshotId);
        const params = new Params();
        const range = pgPathRange(params, options.prefix ?? '', after);
        // The page is cut before the version rows are joined: limit + 1 lookups, not one per pin.
        const first = params.add(limit + 1);
        const sql = `SELECT p.path, v.version_id, v.content_hash, v.size, v.executable, v.symlink, v.dataset
          FROM (SELECT s.path, s.version_seq FROM (${snapshotRowsSql(ref, params, range, first)}) s ORDER BY s.path LIMIT ${first}) p
          JOIN versions v ON v.seq = p.version_seq ORDER BY p.path`;
        return tx.query<PinRow>(sql, params.values);
      },
      { readOnly: true },
    );
    const result: Page<SnapshotEntry> = { items: rows.slice(0, limit).map(toSnapshotEntry) };
    if (rows.length > limit) result.nextCursor = encodeCursor('snapshot-entries', rows[limit - 1]!.path);
    return result;
  };

  const insertTag = async (tx: Tx, projectId: string, tag: string, snap: number): Promise<void> => {
    if (!storable(tag)) throw new StrataError('INVALID_ARGUMENT', { message: 'A tag contains NUL', details: { field: 'tag' } });
    const inserted = await tx.query('INSERT INTO tags (project_id, tag, snap) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING 1', [projectId, tag, snap]);
    if (inserted.length === 0) throw new StrataError('TAG_TAKEN', { details: { tag } });
  };

  const importChain = (projectId: string, steps: ImportStep[], expectedTip: string | null): Promise<Snapshot[]> =>
    locked(projectId, async (tx) => {
      let tip: Known['tip'] = await tipOf(tx, projectId);
      if ((tip?.snapshot_id ?? null) !== expectedTip) throw chainMoved(expectedTip, tip?.snapshot_id ?? null);
      const created: Snapshot[] = [];
      // Kept up to date commit by commit: counting the project's entries for each snapshot was a scan
      // of every entry per pushed commit (bench/git-push.ts).
      const running: Totals = (await tx.one<Totals>('SELECT count(*) AS file_count, coalesce(sum(size), 0) AS total_size FROM entries WHERE project_id = $1', [projectId]))!;
      for (const step of steps) {
        const written: Known['written'] = [];
        for (const commit of step.commits) {
          const { record } = commit;
          // The lock held is this project's: a record of another would be written without its own.
          if (record.projectId !== projectId) throw new StrataError('INVALID_ARGUMENT', { message: 'a record of another project' });
          const result = await pgCommitOne(tx, commit, (seq, previousSize) => {
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
        const made = await createSnapshot(tx, step.snapshot, { totals: { ...running }, written, tip });
        tip = made.tip;
        for (const tag of step.tags) await insertTag(tx, projectId, tag, made.snap);
        created.push({ ...made.snapshot, tags: [...step.tags].sort() });
      }
      return created;
    });

  return {
    create: (input) => locked(input.projectId, async (tx) => (await createSnapshot(tx, input)).snapshot),
    get: (projectId, snapshotId) => (storable(snapshotId) ? one(`SELECT ${SNAPSHOT_WITH_TAGS} FROM snapshots WHERE snapshot_id = $1 AND project_id = $2`, [snapshotId, projectId]) : Promise.resolve(null)),
    list,
    tip: (projectId) => one(`SELECT ${SNAPSHOT_WITH_TAGS} FROM snapshots WHERE project_id = $1 ORDER BY seq DESC LIMIT 1`, [projectId]),
    entries,
    ...createPgIdMatch(db, 'snapshots'),
    ...createPgDiff(db),
    ...createPgSnapshotSync(db),
    importChain,
    addTag: (projectId, snapshotId, tag) =>
      locked(projectId, async (tx) => {
        const ref = await snapRef(tx, projectId, snapshotId);
        await insertTag(tx, projectId, tag, ref.snap);
      }),
    removeTag: async (projectId, tag) =>
      storable(tag) && (await locked(projectId, async (tx) => (await tx.query('DELETE FROM tags WHERE project_id = $1 AND tag = $2 RETURNING 1', [projectId, tag])).length > 0)),
    listTags: (projectId) =>
      db.query<{ tag: string; snapshotId: string }>('SELECT t.tag, s.snapshot_id AS "snapshotId" FROM tags t JOIN snapshots s ON s.snap = t.snap WHERE t.project_id = $1 ORDER BY t.tag', [projectId]),
    resolveTag: (projectId, tag) =>
      storable(tag) ? one(`SELECT ${SNAPSHOT_WITH_TAGS} FROM snapshots WHERE snap = (SELECT snap FROM tags WHERE project_id = $1 AND tag = $2)`, [projectId, tag]) : Promise.resolve(null),
  };
}
