// What sync asks of the metadata: which content a project can count on (migration 7,
// VersionRepository.unavailableObjects), version ids in use, and the project's changes in order.
import type { Database } from 'better-sqlite3';
import type { VersionRepository } from '../ports/metadata-repository.js';
import type { ContentHash } from '../types.js';
import { run, toVersion, VERSION_COLUMNS, type VersionRow } from './sqlite-rows.js';

type SyncObjectMethods = Pick<VersionRepository, 'unavailableObjects' | 'recordUpload' | 'versionIdInUse' | 'changesAfter'>;

export function createSqliteSyncObjects(db: Database): SyncObjectMethods {
  const uploaded = db.prepare('SELECT 1 FROM project_objects WHERE project_id = ? AND content_hash = ?').pluck();
  // versions_by_hash finds the few records of a hash; the project is checked on those.
  const referenced = db.prepare('SELECT 1 FROM versions WHERE content_hash = ? AND project_id = ? LIMIT 1').pluck();
  const referencedShard = db
    .prepare(
      `SELECT 1 FROM dataset_shards s JOIN versions v ON v.content_hash = s.manifest_hash
       WHERE s.shard_hash = ? AND v.project_id = ? LIMIT 1`,
    )
    .pluck();
  const insert = db.prepare(
    'INSERT INTO project_objects (project_id, content_hash, size, uploaded_at) VALUES (?, ?, ?, ?) ON CONFLICT (project_id, content_hash) DO NOTHING',
  );
  const versionExists = db.prepare('SELECT 1 FROM versions WHERE version_id = ?').pluck();
  // versions_by_project (project_id, seq): a range scan from the position on.
  const after = db.prepare(`SELECT ${VERSION_COLUMNS} FROM versions WHERE project_id = ? AND seq > ? ORDER BY seq LIMIT ?`);
  const unavailable = db.transaction((projectId: string, hashes: ContentHash[]) =>
    hashes.filter(
      (hash) =>
        uploaded.get(projectId, hash) === undefined &&
        referenced.get(hash, projectId) === undefined &&
        referencedShard.get(hash, projectId) === undefined,
    ),
  );
  return {
    unavailableObjects: (projectId, hashes) => run(() => unavailable(projectId, hashes)),
    recordUpload: (projectId, upload) =>
      run(() => {
        insert.run(projectId, upload.contentHash, upload.size, upload.at);
      }),
    versionIdInUse: (versionId) => run(() => versionExists.get(versionId) !== undefined),
    changesAfter: (projectId, afterSeq, limit) =>
      run(() => {
        const rows = after.all(projectId, afterSeq, limit) as VersionRow[];
        return { items: rows.map(toVersion), lastSeq: rows.at(-1)?.seq ?? null };
      }),
  };
}
