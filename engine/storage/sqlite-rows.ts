import Database from 'better-sqlite3';
import { storageFailure } from '../errors.js';
import type { SnapshotCreate } from '../ports/metadata-repository.js';
import type { ActorKind, ContentHash, Entry, Snapshot, SnapshotEntry, SnapshotGitIdent, VersionKind, VersionRecord } from '../types.js';

// Row shapes as SQLite returns them (snake_case) and their mapping to the camelCase resources.

export interface VersionRow {
  seq: number;
  version_id: string;
  project_id: string;
  path: string;
  content_hash: string | null;
  size: number;
  actor_id: string;
  actor_kind: string;
  actor_name: string;
  timestamp: string;
  kind: string;
  restored_from: string | null;
  executable: number;
  symlink: number;
  dataset: number;
}

export const VERSION_COLUMNS =
  'seq, version_id, project_id, path, content_hash, size, actor_id, actor_kind, actor_name, timestamp, kind, restored_from, executable, symlink, dataset';

export function toVersion(row: VersionRow): VersionRecord {
  return {
    versionId: row.version_id,
    projectId: row.project_id,
    path: row.path,
    contentHash: row.content_hash as ContentHash | null,
    size: row.size,
    actor: { id: row.actor_id, kind: row.actor_kind as ActorKind, name: row.actor_name },
    timestamp: row.timestamp,
    kind: row.kind as VersionKind,
    restoredFrom: row.restored_from,
    executable: row.executable === 1,
    symlink: row.symlink === 1,
    dataset: row.dataset === 1,
  };
}

export interface EntryRow {
  path: string;
  version_id: string;
  content_hash: string;
  size: number;
  timestamp: string;
  executable: number;
  symlink: number;
  dataset: number;
}

export function toEntry(row: EntryRow): Entry {
  return {
    path: row.path,
    versionId: row.version_id,
    contentHash: row.content_hash as ContentHash,
    size: row.size,
    timestamp: row.timestamp,
    executable: row.executable === 1,
    symlink: row.symlink === 1,
    dataset: row.dataset === 1,
  };
}

/** The entry a version record with content makes current (both backends' committers). */
export function entryOfRecord(record: VersionRecord & { contentHash: ContentHash }): Entry {
  return {
    path: record.path,
    versionId: record.versionId,
    contentHash: record.contentHash,
    size: record.size,
    timestamp: record.timestamp,
    executable: record.executable,
    symlink: record.symlink,
    dataset: record.dataset,
  };
}

export function toSnapshotEntry(row: Omit<EntryRow, 'timestamp'>): SnapshotEntry {
  return {
    path: row.path,
    versionId: row.version_id,
    contentHash: row.content_hash as ContentHash,
    size: row.size,
    executable: row.executable === 1,
    symlink: row.symlink === 1,
    dataset: row.dataset === 1,
  };
}

export interface SnapshotRow {
  snap: number;
  snapshot_id: string;
  project_id: string;
  parent_id: string | null;
  seq: number;
  message: string;
  actor_id: string;
  actor_kind: string;
  actor_name: string;
  timestamp: string;
  file_count: number;
  total_size: number;
  git_ident: string | null;
}

export const SNAPSHOT_COLUMNS =
  'snap, snapshot_id, project_id, parent_id, seq, message, actor_id, actor_kind, actor_name, timestamp, file_count, total_size, git_ident';

export function toSnapshot(row: SnapshotRow, tags: string[]): Snapshot {
  const snapshot: Snapshot = {
    snapshotId: row.snapshot_id,
    projectId: row.project_id,
    parentId: row.parent_id,
    seq: row.seq,
    message: row.message,
    actor: { id: row.actor_id, kind: row.actor_kind as ActorKind, name: row.actor_name },
    timestamp: row.timestamp,
    tags,
    fileCount: row.file_count,
    totalSize: row.total_size,
  };
  if (row.git_ident !== null) snapshot.git = JSON.parse(row.git_ident) as SnapshotGitIdent;
  return snapshot;
}

/**
 * Runs a synchronous database operation and hands back a settled promise. SQLite failures (busy
 * after the timeout, disk full, I/O errors, constraint violations that signal a bug) become
 * STORAGE_ERROR with the SQLite code in details; our own coded errors and TypeErrors pass through.
 */
/**
 * Appends a snapshot row after the chain's tip (the next seq, the tip as parent), inside the caller's
 * transaction: local snapshots and those that come through sync share the chain and its numbering.
 */
export function snapshotAppender(db: Database.Database) {
  const insert = db.prepare(
    `INSERT INTO snapshots (snapshot_id, project_id, parent_id, seq, message, actor_id, actor_kind, actor_name, timestamp, file_count, total_size, git_ident)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  return (input: SnapshotCreate, tip: { snapshot_id: string; seq: number } | undefined, counts: { fileCount: number; totalSize: number }) => {
    const parentId = tip?.snapshot_id ?? null;
    const seq = (tip?.seq ?? 0) + 1;
    const { actor } = input;
    const git = input.git === undefined ? null : JSON.stringify(input.git);
    const { lastInsertRowid } = insert.run(input.snapshotId, input.projectId, parentId, seq, input.message, actor.id, actor.kind, actor.name, input.timestamp, counts.fileCount, counts.totalSize, git);
    const snapshot: Snapshot = { snapshotId: input.snapshotId, projectId: input.projectId, parentId, seq, message: input.message, actor: { ...actor }, timestamp: input.timestamp, tags: [], fileCount: counts.fileCount, totalSize: counts.totalSize };
    if (input.git !== undefined) snapshot.git = { ...input.git };
    return { snap: Number(lastInsertRowid), snapshot };
  };
}

export function run<T>(operation: () => T): Promise<T> {
  try {
    return Promise.resolve(operation());
  } catch (error) {
    return Promise.reject(storageError(error));
  }
}

export function storageError(error: unknown): unknown {
  if (error instanceof Database.SqliteError) {
    return storageFailure(`The metadata database failed: ${error.code}`, { details: { sqliteCode: error.code }, cause: error });
  }
  return error;
}
