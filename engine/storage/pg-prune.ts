import type { PrunePreview, PruneResult, VersionRepository } from '../ports/metadata-repository.js';
import type { ContentHash } from '../types.js';
import type { PgDatabase } from './pg-db.js';
import { hasNul } from './pg-sync-objects.js';
import { summarizePreview } from './sqlite-prune.js';

// Retention and the reference checks the garbage collector relies on (sqlite-prune.ts, ported).
//
// A snapshot pin is a foreign key to the version row it pins (pg-migrations.ts), so every hash a
// snapshot pins is also the hash of a surviving version row: checking the versions table alone
// answers "referenced by any version record or snapshot pin".

// A candidate survives if a snapshot pins it or it is its path's current version. A snapshot pins
// what its checkpoint's snapshot_entries hold and what the change sets of its chain name. Under a
// sync hold ($3: the pushed position), versions made here and not yet pushed survive, and so does a
// dataset version one of them replaced: the push sends the new version as a delta against it (its
// shards are what the edit is copied from), and a large file keeps no history by default.
const UNPROTECTED = `
  NOT EXISTS (SELECT 1 FROM snapshot_entries se WHERE se.version_seq = c.seq)
  AND NOT EXISTS (SELECT 1 FROM snapshot_changes sc WHERE sc.version_seq = c.seq)
  AND NOT EXISTS (SELECT 1 FROM entries e WHERE e.project_id = c.project_id AND e.path = c.path AND e.version_seq = c.seq)
  AND (c.pulled = 1 OR c.seq <= $3::bigint)
  AND (c.dataset = 0 OR NOT EXISTS (
    SELECT 1 FROM versions n
    WHERE n.project_id = c.project_id AND n.seq > $3::bigint AND n.pulled = 0 AND n.base_version_id = c.version_id))`;

// Candidates and their deletion in one statement. The window ranks each path's versions newest first
// before the protection filter applies, so pinned and current versions still count toward `keep`
// ($2). $4 (the paths, or null for all) keeps the one statement for both shapes; Postgres plans each
// execution with its parameters (unnamed statements), so the null case costs no index on paths.
const PRUNE = `
WITH c AS (
  SELECT seq, version_id, project_id, path, content_hash, pulled, dataset,
         row_number() OVER (PARTITION BY path ORDER BY seq DESC) AS rank
  FROM versions WHERE project_id = $1::text AND ($4::text[] IS NULL OR path = ANY($4::text[]))
), doomed AS (
  SELECT c.seq FROM c WHERE c.rank > $2::bigint AND ${UNPROTECTED}
)
DELETE FROM versions v USING doomed WHERE v.seq = doomed.seq RETURNING v.content_hash, v.size`;

// Retention's dry run: the same candidates, counted per path instead of deleted.
const PREVIEW = `
WITH c AS (
  SELECT seq, version_id, project_id, path, size, pulled, dataset,
         row_number() OVER (PARTITION BY path ORDER BY seq DESC) AS rank
  FROM versions WHERE project_id = $1::text
)
SELECT c.path, count(*) AS versions, sum(c.size) AS bytes FROM c WHERE c.rank > $2::bigint AND ${UNPROTECTED} GROUP BY c.path`;

// A released manifest releases its shards too (the caller re-checks each against every reference).
const SHARDS_OF = 'SELECT DISTINCT shard_hash FROM dataset_shards WHERE manifest_hash = ANY($1::text[])';

// Referenced: by a version record, as a shard of a manifest some version references, or as content
// uploaded to a project for sync (migration 7): a record that uses an upload may follow at any time.
const REFERENCED = `
  SELECT content_hash AS hash FROM versions WHERE content_hash = ANY($1::text[])
  UNION
  SELECT ds.shard_hash FROM dataset_shards ds
  WHERE ds.shard_hash = ANY($1::text[]) AND EXISTS (SELECT 1 FROM versions v WHERE v.content_hash = ds.manifest_hash)
  UNION
  SELECT content_hash FROM project_objects WHERE content_hash = ANY($1::text[])`;

// Version contents first, then dataset shards, then uploads, each distinct (a hash may still appear
// in more than one part). Streamed through one server-side cursor: one consistent snapshot, never all
// rows in memory, and the pool's other connections keep serving writes while the consumer awaits.
const ALL_REFERENCED = `
  SELECT hash FROM (SELECT DISTINCT content_hash AS hash FROM versions WHERE content_hash IS NOT NULL) a
  UNION ALL
  SELECT hash FROM (
    SELECT DISTINCT ds.shard_hash AS hash FROM dataset_shards ds
    WHERE EXISTS (SELECT 1 FROM versions v WHERE v.content_hash = ds.manifest_hash)
  ) s
  UNION ALL
  SELECT hash FROM (SELECT DISTINCT content_hash AS hash FROM project_objects) u`;

// One project's version contents (repeats included), its manifests' shards once per manifest (the
// semi-join lists a manifest's shards once however many versions reference it), then its uploads.
const PROJECT_REFERENCED = `
  SELECT content_hash AS hash FROM versions WHERE project_id = $1::text AND content_hash IS NOT NULL
  UNION ALL
  SELECT ds.shard_hash FROM dataset_shards ds
  WHERE ds.manifest_hash IN (SELECT content_hash FROM versions WHERE project_id = $1::text AND dataset = 1 AND content_hash IS NOT NULL)
  UNION ALL
  SELECT content_hash FROM project_objects WHERE project_id = $1::text`;

type PruneMethods = Pick<VersionRepository, 'prune' | 'previewPrune' | 'referencedHashes' | 'allReferencedHashes' | 'projectReferencedHashes'>;

export function createPgPrune(db: PgDatabase): PruneMethods {
  const prune = (projectId: string, keep: number, paths: string[] | undefined, hold: number): Promise<PruneResult> =>
    db.tx(
      async (tx) => {
        // The project lock: a snapshot (which pins) or a commit (which changes what is current) of
        // this project cannot interleave with the candidates' protection check and their deletion.
        const deleted = await tx.query<{ content_hash: ContentHash | null; size: number }>(PRUNE, [
          projectId,
          keep,
          hold,
          paths === undefined ? null : [...new Set(paths)].filter((path) => !hasNul(path)),
        ]);
        const released = new Set<ContentHash>();
        for (const row of deleted) if (row.content_hash !== null) released.add(row.content_hash);
        if (released.size > 0) {
          const shards = await tx.query<{ shard_hash: ContentHash }>(SHARDS_OF, [[...released]]);
          for (const row of shards) released.add(row.shard_hash);
        }
        const bytes = deleted.reduce((sum, row) => sum + row.size, 0);
        return { prunedVersions: deleted.length, prunedBytes: bytes, releasedHashes: [...released] };
      },
      { projects: [projectId] },
    );

  return {
    prune: async (projectId, options) => {
      if (!Number.isSafeInteger(options.keep) || options.keep < 0) {
        throw new TypeError(`keep must be a non-negative integer, got ${options.keep}`);
      }
      // 0 = unlimited retention: nothing is ever pruned.
      if (options.keep === 0) return { prunedVersions: 0, prunedBytes: 0, releasedHashes: [] };
      return prune(projectId, options.keep, options.paths, options.holdAfterSeq ?? Number.MAX_SAFE_INTEGER);
    },
    previewPrune: async (projectId, options) => {
      if (!Number.isSafeInteger(options.keep) || options.keep < 0) throw new TypeError(`keep must be a non-negative integer, got ${options.keep}`);
      if (options.keep === 0) return { versions: 0, bytes: 0, pathCount: 0, paths: [] };
      const rows = await db.query<PrunePreview['paths'][number]>(PREVIEW, [projectId, options.keep, options.holdAfterSeq ?? Number.MAX_SAFE_INTEGER]);
      return summarizePreview(rows, options.top);
    },
    // One statement whatever the number of hashes: the array is one parameter (hashed by Postgres).
    referencedHashes: async (hashes) => {
      const asked = [...new Set(hashes)].filter((hash) => !hasNul(hash));
      if (asked.length === 0) return new Set();
      const rows = await db.query<{ hash: ContentHash }>(REFERENCED, [asked]);
      return new Set(rows.map((row) => row.hash));
    },
    allReferencedHashes: async function* () {
      for await (const row of db.stream<{ hash: ContentHash }>(ALL_REFERENCED)) yield row.hash;
    },
    projectReferencedHashes: async function* (projectId: string) {
      for await (const row of db.stream<{ hash: ContentHash }>(PROJECT_REFERENCED, [projectId])) yield row.hash;
    },
  };
}
