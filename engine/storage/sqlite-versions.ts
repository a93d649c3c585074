import type { Database } from 'better-sqlite3';
import { createSqliteEntriesAt } from './sqlite-entries-at.js';
import type { VersionCommit, VersionCommitResult, VersionRepository, WriteConflict } from '../ports/metadata-repository.js';
import type { Entry, Page, VersionRecord } from '../types.js';
import { checkLimit, decodePathCursor, decodeSeqCursor, encodeCursor } from './sqlite-cursor.js';
import { createSqliteIdMatch } from './sqlite-id-match.js';
import { createSqliteRenames } from './sqlite-renames.js';
import { createSqlitePrune } from './sqlite-prune.js';
import { pathRange, statementCache } from './sqlite-range.js';
import { createSqliteSyncObjects } from './sqlite-sync-objects.js';
import { type EntryRow, entryOfRecord, run, toEntry, toVersion, VERSION_COLUMNS, type VersionRow } from './sqlite-rows.js';

const ENTRY_COLUMNS = 'path, version_id, content_hash, size, timestamp, executable, symlink, dataset';

/** Told a committed record's version seq, and the size of the entry it replaced (null: none). */
export type Committed = (seq: number, previousSize: number | null) => void;

/**
 * Commits one version record (and its entry) with its precondition checked, inside whatever
 * transaction the caller runs: the versions repository's batches, and a git push's whole chain
 * (sqlite-snapshots.ts importChain).
 */
/** "Is this a directory?" and "what keeps a file from being written here?", for one connection. */
function writeConflictChecks(db: Database) {
  const prepared = statementCache(db);
  const anyEntry = db.prepare('SELECT 1 FROM entries WHERE project_id = ? LIMIT 1').pluck();
  const entryExists = db.prepare('SELECT 1 FROM entries WHERE project_id = ? AND path = ?').pluck();
  const isDirectory = (projectId: string, dirPath: string): boolean => {
    if (dirPath === '') return anyEntry.get(projectId) !== undefined;
    // 'dir/' < every path below dir < 'dir0' ('0' follows '/'): an index range, no LIKE.
    const range = pathRange('path', `${dirPath}/`, undefined);
    return prepared(`SELECT 1 FROM entries WHERE project_id = ? AND ${range.sql} LIMIT 1`).get(projectId, ...range.params) !== undefined;
  };
  const writeConflict = (projectId: string, path: string): WriteConflict | null => {
    if (isDirectory(projectId, path)) return { kind: 'directory' };
    for (let slash = path.indexOf('/'); slash !== -1; slash = path.indexOf('/', slash + 1)) {
      const ancestor = path.slice(0, slash);
      if (entryExists.get(projectId, ancestor) !== undefined) return { kind: 'file-ancestor', ancestor };
    }
    return null;
  };
  return { isDirectory, writeConflict };
}

export function createCommitter(db: Database): (commit: VersionCommit, committed?: Committed) => VersionCommitResult {
  const { writeConflict } = writeConflictChecks(db);
  const currentOf = db.prepare('SELECT version_id, size FROM entries WHERE project_id = ? AND path = ?');
  const insertVersion = db.prepare(
    `INSERT INTO versions (version_id, project_id, path, content_hash, size, actor_id, actor_kind, actor_name, timestamp, kind, restored_from, executable, symlink, dataset, base_version_id, pulled)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const upsertEntry = db.prepare(
    `INSERT INTO entries (project_id, path, version_seq, version_id, content_hash, size, timestamp, executable, symlink, dataset) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (project_id, path) DO UPDATE SET version_seq = excluded.version_seq, version_id = excluded.version_id,
       content_hash = excluded.content_hash, size = excluded.size, timestamp = excluded.timestamp, executable = excluded.executable,
       symlink = excluded.symlink, dataset = excluded.dataset`,
  );
  const insertShard = db.prepare('INSERT OR IGNORE INTO dataset_shards (manifest_hash, shard_hash) VALUES (?, ?)');
  const deleteEntry = db.prepare('DELETE FROM entries WHERE project_id = ? AND path = ?');
  return (commit: VersionCommit, committed?: Committed): VersionCommitResult => {
    const { record, expectedCurrent } = commit;
    const historyOnly = commit.historyOnly === true;
    // Always read: the replaced version is the record's base in the sync outbox (migration 8).
    const previous = historyOnly ? undefined : (currentOf.get(record.projectId, record.path) as { version_id: string; size: number } | undefined);
    const current = previous?.version_id ?? null;
    if (!historyOnly && expectedCurrent !== undefined && current !== expectedCurrent) return { ok: false, code: 'STALE_BASE_VERSION', currentVersionId: current };
    // Inside the transaction, after the batch's earlier records: exactly the tree this one joins.
    if (commit.checkPath === true && !historyOnly && record.contentHash !== null) {
      const conflict = writeConflict(record.projectId, record.path);
      if (conflict !== null) return { ok: false, code: 'PATH_CONFLICT', conflict };
    }
    const { lastInsertRowid } = insertVersion.run(
      record.versionId,
      record.projectId,
      record.path,
      record.contentHash,
      record.size,
      record.actor.id,
      record.actor.kind,
      record.actor.name,
      record.timestamp,
      record.kind,
      record.restoredFrom,
      record.executable ? 1 : 0,
      record.symlink ? 1 : 0,
      record.dataset ? 1 : 0,
      current,
      commit.pulled === true ? 1 : 0,
    );
    committed?.(Number(lastInsertRowid), previous === undefined ? null : previous.size);
    if (record.dataset && record.contentHash !== null) {
      for (const shard of commit.shards ?? []) insertShard.run(record.contentHash, shard);
    }
    if (historyOnly) return { ok: true, entry: null };
    if (record.contentHash === null) {
      deleteEntry.run(record.projectId, record.path);
      return { ok: true, entry: null };
    }
    const entry = entryOfRecord({ ...record, contentHash: record.contentHash });
    upsertEntry.run(
      record.projectId,
      entry.path,
      Number(lastInsertRowid),
      entry.versionId,
      entry.contentHash,
      entry.size,
      entry.timestamp,
      entry.executable ? 1 : 0,
      entry.symlink ? 1 : 0,
      entry.dataset ? 1 : 0,
    );
    return { ok: true, entry };
  };

}

export function createSqliteVersions(db: Database): VersionRepository {
  const currentVersionOf = db.prepare('SELECT version_id FROM entries WHERE project_id = ? AND path = ?').pluck();
  const commitOne = createCommitter(db);
  const versionById = db.prepare(`SELECT ${VERSION_COLUMNS} FROM versions WHERE version_id = ? AND project_id = ?`);
  const pathHistory = db.prepare(
    `SELECT ${VERSION_COLUMNS} FROM versions WHERE project_id = ? AND path = ? AND seq < ? ORDER BY seq DESC LIMIT ?`,
  );
  const projectHistory = db.prepare(
    `SELECT ${VERSION_COLUMNS} FROM versions WHERE project_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`,
  );
  const entryByPath = db.prepare(`SELECT ${ENTRY_COLUMNS} FROM entries WHERE project_id = ? AND path = ?`);
  const countVersions = db.prepare('SELECT count(*) FROM versions WHERE project_id = ?').pluck();
  const prepared = statementCache(db);
  const { isDirectory, writeConflict } = writeConflictChecks(db);

  const commitBatch = db.transaction((commits: VersionCommit[]) => commits.map((commit) => commitOne(commit)));

  // All or nothing: the attempt runs in a SAVEPOINT (a nested better-sqlite3 transaction) that the
  // first failed precondition rolls back. Every record then reports its path's current version as
  // it really is, never an id written earlier in the rolled-back batch, so a retry can succeed.
  const rolledBack = new Error('a precondition failed; the atomic batch was rolled back');
  const attempt = db.transaction((commits: VersionCommit[]): VersionCommitResult[] => {
    const results: VersionCommitResult[] = [];
    for (const commit of commits) {
      const result = commitOne(commit);
      if (!result.ok) throw rolledBack;
      results.push(result);
    }
    return results;
  });
  const commitAtomic = db.transaction((commits: VersionCommit[]): VersionCommitResult[] => {
    try {
      return attempt(commits);
    } catch (error) {
      if (error !== rolledBack) throw error;
    }
    return commits.map(({ record, checkPath }): VersionCommitResult => {
      const conflict = checkPath === true && record.contentHash !== null ? writeConflict(record.projectId, record.path) : null;
      if (conflict !== null) return { ok: false, code: 'PATH_CONFLICT', conflict };
      return { ok: false, code: 'STALE_BASE_VERSION', currentVersionId: (currentVersionOf.get(record.projectId, record.path) as string | undefined) ?? null };
    });
  });

  const history = (projectId: string, query: { path?: string; cursor?: string; limit: number }): Page<VersionRecord> => {
    const limit = checkLimit(query.limit);
    const before = query.cursor === undefined ? Number.MAX_SAFE_INTEGER : decodeSeqCursor('history', query.cursor);
    const rows = (
      query.path === undefined
        ? projectHistory.all(projectId, before, limit + 1)
        : pathHistory.all(projectId, query.path, before, limit + 1)
    ) as VersionRow[];
    const page: Page<VersionRecord> = { items: rows.slice(0, limit).map(toVersion) };
    if (rows.length > limit) page.nextCursor = encodeCursor('history', rows[limit - 1]!.seq);
    return page;
  };

  const listEntries = (projectId: string, options: { prefix: string; cursor?: string; limit: number }): Page<Entry> => {
    const limit = checkLimit(options.limit);
    const after = options.cursor === undefined ? undefined : decodePathCursor('entries', options.cursor);
    const range = pathRange('path', options.prefix, after);
    const rows = prepared(
      `SELECT ${ENTRY_COLUMNS} FROM entries WHERE project_id = ? AND ${range.sql} ORDER BY path LIMIT ?`,
    ).all(projectId, ...range.params, limit + 1) as EntryRow[];
    const page: Page<Entry> = { items: rows.slice(0, limit).map(toEntry) };
    if (rows.length > limit) page.nextCursor = encodeCursor('entries', rows[limit - 1]!.path);
    return page;
  };

  return {
    // IMMEDIATE: take the write lock before reading the preconditions, so another process cannot
    // commit between our check and our write (and we never hit SQLITE_BUSY on lock upgrade).
    commit: (commits, options) =>
      run(() => {
        // No store hands this repository content to keep (ContentStore.contentWithRecordMaxBytes).
        if (commits.some((c) => c.content !== undefined)) throw new TypeError('this repository does not store content with records');
        return (options?.atomic === true ? commitAtomic : commitBatch).immediate(commits);
      }),
    get: (projectId, versionId) =>
      run(() => {
        const row = versionById.get(versionId, projectId) as VersionRow | undefined;
        return row === undefined ? null : toVersion(row);
      }),
    history: (projectId, query) => run(() => history(projectId, query)),
    getEntry: (projectId, path) =>
      run(() => {
        const row = entryByPath.get(projectId, path) as EntryRow | undefined;
        return row === undefined ? null : toEntry(row);
      }),
    listEntries: (projectId, options) => run(() => listEntries(projectId, options)),
    isDirectory: (projectId, dirPath) => run(() => isDirectory(projectId, dirPath)),
    writeConflict: (projectId, path) => run(() => writeConflict(projectId, path)),
    countVersions: (projectId) => run(() => countVersions.get(projectId) as number),
    ...createSqliteIdMatch(db, 'versions'),
    ...createSqliteRenames(db),
    ...createSqliteEntriesAt(db),
    ...createSqlitePrune(db),
    ...createSqliteSyncObjects(db),
  };
}
