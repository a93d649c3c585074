// What sync asks of the metadata: which content a project can count on (migration 7,
// VersionRepository.unavailableObjects), version ids in use, the project's changes in order (the
// server's feed), and the workstation's outbox (migration 8).
import type { Database } from 'better-sqlite3';
import type { VersionRepository } from '../ports/metadata-repository.js';
import type { ContentHash } from '../types.js';
import { run, toVersion, VERSION_COLUMNS, type VersionRow } from './sqlite-rows.js';

type SyncObjectMethods = Pick<VersionRepository, 'unavailableObjects' | 'recordUpload' | 'recordUploads' | 'versionIdInUse' | 'knownVersionIds' | 'changesAfter' | 'outboxAfter' | 'outboxStats' | 'pathHead'>;

export function createSqliteSyncObjects(db: Database): SyncObjectMethods {
  const uploaded = db.prepare('SELECT 1 FROM project_objects WHERE project_id = ? AND content_hash = ?').pluck();
  // versions_by_hash finds the few records of a hash; the project is checked on those.
  const referenced = db.prepare('SELECT 1 FROM versions WHERE content_hash = ? AND project_id = ? LIMIT 1').pluck();
  const referencedShard = db
    .prepare(
      // CROSS JOIN keeps this order (shard → its manifests → their records, all by index): left to
      // itself the planner scanned every version of the project for each hash, and a push of 100,000
      // versions slowed to 50 a second.
      `SELECT 1 FROM dataset_shards s CROSS JOIN versions v ON v.content_hash = s.manifest_hash
       WHERE s.shard_hash = ? AND v.project_id = ? LIMIT 1`,
    )
    .pluck();
  const insert = db.prepare(
    'INSERT INTO project_objects (project_id, content_hash, size, uploaded_at) VALUES (?, ?, ?, ?) ON CONFLICT (project_id, content_hash) DO NOTHING',
  );
  const insertMany = db.transaction((projectId: string, uploads: Array<{ contentHash: ContentHash; size: number; at: string }>) => {
    for (const upload of uploads) insert.run(projectId, upload.contentHash, upload.size, upload.at);
  });
  const versionExists = db.prepare('SELECT 1 FROM versions WHERE version_id = ?').pluck();
  const versionOfProject = db.prepare('SELECT 1 FROM versions WHERE version_id = ? AND project_id = ?').pluck();
  const known = db.transaction((projectId: string, ids: string[]) => new Set(ids.filter((id) => versionOfProject.get(id, projectId) !== undefined)));
  // versions_by_project (project_id, seq): a range scan from the position on.
  const after = db.prepare(
    // current: the path's newest record (a deletion too: the path is gone as of it).
    `SELECT ${VERSION_COLUMNS}, seq = (SELECT max(v.seq) FROM versions v WHERE v.project_id = versions.project_id AND v.path = versions.path) AS current
     FROM versions WHERE project_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
  );
  const outbox = db.prepare(`SELECT ${VERSION_COLUMNS}, base_version_id, pulled FROM versions WHERE project_id = ? AND seq > ? ORDER BY seq LIMIT ?`);
  const head = db.prepare('SELECT seq, version_id, pulled FROM versions WHERE project_id = ? AND path = ? ORDER BY seq DESC LIMIT 1');
  const pending = db.prepare(
    'SELECT count(*) AS count, coalesce(sum(size), 0) AS bytes, min(timestamp) AS oldest FROM versions WHERE project_id = ? AND seq > ? AND pulled = 0',
  );
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
    recordUploads: (projectId, uploads) =>
      run(() => {
        insertMany(projectId, uploads);
      }),
    versionIdInUse: (versionId) => run(() => versionExists.get(versionId) !== undefined),
    knownVersionIds: (projectId, versionIds) => run(() => known(projectId, versionIds)),
    changesAfter: (projectId, afterSeq, limit) =>
      run(() => {
        const rows = after.all(projectId, afterSeq, limit) as Array<VersionRow & { current: 1 | null }>;
        return { items: rows.map((row) => ({ ...toVersion(row), current: row.current === 1 })), lastSeq: rows.at(-1)?.seq ?? null };
      }),
    outboxAfter: (projectId, afterSeq, limit) =>
      run(() => {
        const rows = outbox.all(projectId, afterSeq, limit) as Array<VersionRow & { base_version_id: string | null; pulled: number }>;
        const items = rows.map((row) => ({ seq: row.seq, record: toVersion(row), baseVersionId: row.base_version_id, pulled: row.pulled === 1 }));
        return { items, lastSeq: rows.at(-1)?.seq ?? null };
      }),
    pathHead: (projectId, path) =>
      run(() => {
        const row = head.get(projectId, path) as { seq: number; version_id: string; pulled: number } | undefined;
        return row === undefined ? null : { seq: row.seq, versionId: row.version_id, pulled: row.pulled === 1 };
      }),
    outboxStats: (projectId, afterSeq) =>
      run(() => {
        const row = pending.get(projectId, afterSeq) as { count: number; bytes: number; oldest: string | null };
        return { count: row.count, bytes: row.bytes, oldest: row.oldest };
      }),
  };
}
