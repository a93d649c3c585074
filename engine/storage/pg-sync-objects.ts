// What sync asks of the metadata (sqlite-sync-objects.ts, ported): which content a project can count
// on (migration 7, VersionRepository.unavailableObjects), version ids in use, the project's changes
// in order (the server's feed), and the workstation's outbox (migration 8).
//
// Why the feed never skips a version. Postgres assigns a version's seq (an identity) when the row is
// inserted, not when its transaction commits, so in general a reader could see seq 12 committed while
// seq 11 is still in flight, advance its position to 12, and never see 11. That cannot happen within
// one project, and the feed is per project: every transaction that inserts versions rows holds the
// project's advisory lock from before its first insert until its commit (pgCommit and pgCommitOne in
// pg-commit.ts, importChain in pg-snapshots.ts; nothing else inserts versions rows). So
// the writers of a project run one after another, and each draws its seqs after the previous one
// committed: per project, seq order is commit order. Postgres makes a commit visible before it
// releases the transaction's locks, so a reader's snapshot holds a prefix of the project's seqs, and
// `seq > afterSeq` resumes exactly where the previous page ended. This relies on the identity's
// sequence handing out increasing values across sessions, which holds with its default CACHE 1 (a
// per-session cache would not). Pruning only deletes rows (and never ones a hold protects), which the
// feed may skip: they are gone.
import { StrataError } from '../errors.js';
import type { SyncChange, VersionRepository } from '../ports/metadata-repository.js';
import type { ContentHash } from '../types.js';
import type { PgDatabase } from './pg-db.js';
import { toVersion, VERSION_COLUMNS, type VersionRow } from './sqlite-rows.js';

/**
 * Postgres text cannot hold NUL (SQLite's can), so no stored id, path or hash contains it: a lookup by
 * such a string finds nothing, as it would in SQLite, instead of failing the statement (22021).
 */
export const hasNul = (...values: ReadonlyArray<string | null | undefined>): boolean => values.some((value) => value?.includes('\u0000') === true);

/** A write of a string Postgres cannot store is the caller's error, not the database's. */
export function requireStorable(field: string, ...values: ReadonlyArray<string | null | undefined>): void {
  if (hasNul(...values)) throw new StrataError('INVALID_ARGUMENT', { message: `The ${field} contains NUL`, details: { field } });
}

type SyncObjectMethods = Pick<
  VersionRepository,
  'unavailableObjects' | 'recordUpload' | 'recordUploads' | 'versionIdInUse' | 'knownVersionIds' | 'changesAfter' | 'outboxAfter' | 'outboxStats' | 'pathHead'
>;

// Each check is an index lookup: project_objects by its key, versions_by_hash then the project, and
// shard → its manifests → their records.
const UNAVAILABLE = `
  SELECT t.hash FROM unnest($2::text[]) AS t(hash)
  WHERE NOT EXISTS (SELECT 1 FROM project_objects o WHERE o.project_id = $1::text AND o.content_hash = t.hash)
    AND NOT EXISTS (SELECT 1 FROM versions v WHERE v.content_hash = t.hash AND v.project_id = $1::text)
    AND NOT EXISTS (
      SELECT 1 FROM dataset_shards s JOIN versions v ON v.content_hash = s.manifest_hash
      WHERE s.shard_hash = t.hash AND v.project_id = $1::text)`;

const INSERT_UPLOADS = `
  INSERT INTO project_objects (project_id, content_hash, size, uploaded_at)
  SELECT $1::text, u.hash, u.size, u.at FROM unnest($2::text[], $3::bigint[], $4::text[]) AS u(hash, size, at)
  ON CONFLICT (project_id, content_hash) DO NOTHING`;

// versions_by_project (project_id, seq): a range scan from the position on. current: the path's
// newest record (a deletion too: the path is gone as of it), read in the same snapshot.
const CHANGES_AFTER = `
  SELECT ${VERSION_COLUMNS},
         seq = (SELECT max(v.seq) FROM versions v WHERE v.project_id = versions.project_id AND v.path = versions.path) AS current
  FROM versions WHERE project_id = $1::text AND seq > $2::bigint ORDER BY seq LIMIT $3::bigint`;

const OUTBOX_AFTER = `SELECT ${VERSION_COLUMNS}, base_version_id, pulled FROM versions WHERE project_id = $1::text AND seq > $2::bigint ORDER BY seq LIMIT $3::bigint`;

const PATH_HEAD = 'SELECT seq, version_id, pulled FROM versions WHERE project_id = $1::text AND path = $2::text ORDER BY seq DESC LIMIT 1';

const OUTBOX_STATS = `
  SELECT count(*) AS count, coalesce(sum(size), 0) AS bytes, min(timestamp) AS oldest
  FROM versions WHERE project_id = $1::text AND seq > $2::bigint AND pulled = 0`;

type Upload = { contentHash: ContentHash; size: number; at: string };

export function createPgSyncObjects(db: PgDatabase): SyncObjectMethods {
  const recordUploads = async (projectId: string, uploads: Upload[]): Promise<void> => {
    if (uploads.length === 0) return;
    requireStorable('contentHash', ...uploads.map((u) => u.contentHash));
    // One statement for the batch, under the project's lock like every write of its rows.
    await db.tx(
      (tx) =>
        tx.query(INSERT_UPLOADS, [projectId, uploads.map((u) => u.contentHash), uploads.map((u) => u.size), uploads.map((u) => u.at)]),
      { projects: [projectId] },
    );
  };
  return {
    unavailableObjects: async (projectId, hashes) => {
      const asked = [...new Set(hashes)].filter((hash) => !hasNul(hash));
      const missing = new Set(asked.length === 0 ? [] : (await db.query<{ hash: ContentHash }>(UNAVAILABLE, [projectId, asked])).map((row) => row.hash));
      // In input order, duplicates kept, as asked; a hash with NUL names nothing the project has.
      return hashes.filter((hash) => hasNul(hash) || missing.has(hash));
    },
    recordUpload: (projectId, upload) => recordUploads(projectId, [upload]),
    recordUploads,
    versionIdInUse: async (versionId) => !hasNul(versionId) && (await db.one('SELECT 1 FROM versions WHERE version_id = $1::text', [versionId])) !== undefined,
    knownVersionIds: async (projectId, versionIds) => {
      const ids = versionIds.filter((id) => !hasNul(id));
      if (ids.length === 0) return new Set();
      const rows = await db.query<{ version_id: string }>('SELECT version_id FROM versions WHERE project_id = $1::text AND version_id = ANY($2::text[])', [
        projectId,
        ids,
      ]);
      return new Set(rows.map((row) => row.version_id));
    },
    changesAfter: async (projectId, afterSeq, limit) => {
      const rows = await db.query<VersionRow & { current: boolean }>(CHANGES_AFTER, [projectId, afterSeq, limit]);
      const items: SyncChange[] = rows.map((row) => ({ ...toVersion(row), current: row.current }));
      return { items, lastSeq: rows.at(-1)?.seq ?? null };
    },
    outboxAfter: async (projectId, afterSeq, limit) => {
      const rows = await db.query<VersionRow & { base_version_id: string | null; pulled: number }>(OUTBOX_AFTER, [projectId, afterSeq, limit]);
      const items = rows.map((row) => ({ seq: row.seq, record: toVersion(row), baseVersionId: row.base_version_id, pulled: row.pulled === 1 }));
      return { items, lastSeq: rows.at(-1)?.seq ?? null };
    },
    pathHead: async (projectId, path) => {
      if (hasNul(path)) return null;
      const row = await db.one<{ seq: number; version_id: string; pulled: number }>(PATH_HEAD, [projectId, path]);
      return row === undefined ? null : { seq: row.seq, versionId: row.version_id, pulled: row.pulled === 1 };
    },
    outboxStats: async (projectId, afterSeq) => {
      const row = (await db.one<{ count: number; bytes: number; oldest: string | null }>(OUTBOX_STATS, [projectId, afterSeq]))!;
      return { count: row.count, bytes: row.bytes, oldest: row.oldest };
    },
  };
}
