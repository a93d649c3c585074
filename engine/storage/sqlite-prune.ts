import type { Database } from 'better-sqlite3';
import type { PrunePreview, PruneResult, VersionRepository } from '../ports/metadata-repository.js';
import type { ContentHash } from '../types.js';
import { run } from './sqlite-rows.js';

// Retention and the reference checks the garbage collector relies on.
//
// A snapshot pin is a foreign key to the version row it pins (see sqlite-migrations.ts), so every
// hash a snapshot pins is also the hash of a surviving version row: checking the versions table
// alone answers "referenced by any version record or snapshot pin".

const IN_CHUNK = 500;
const STREAM_PAGE = 1_000;

// A candidate survives if a snapshot pins it or it is its path's current version. A snapshot pins
// what its checkpoint's snapshot_entries hold and what the change sets of its chain name. Under a
// sync hold (@hold: the pushed position), versions made here and not yet pushed survive, and so does
// a dataset version one of them replaced: the push sends the new version as a delta against it (its
// shards are what the edit is copied from), and a large file keeps no history by default.
const UNPROTECTED = `
  NOT EXISTS (SELECT 1 FROM snapshot_entries se WHERE se.version_seq = c.seq)
  AND NOT EXISTS (SELECT 1 FROM snapshot_changes sc WHERE sc.version_seq = c.seq)
  AND NOT EXISTS (SELECT 1 FROM entries e WHERE e.project_id = c.project_id AND e.path = c.path AND e.version_seq = c.seq)
  AND (c.pulled = 1 OR c.seq <= @hold)
  AND (c.dataset = 0 OR NOT EXISTS (
    SELECT 1 FROM versions n INDEXED BY versions_by_project
    WHERE n.project_id = c.project_id AND n.seq > @hold AND n.pulled = 0 AND n.base_version_id = c.version_id))`;

interface Candidate {
  seq: number;
  content_hash: string | null;
  size: number;
}

type PruneMethods = Pick<VersionRepository, 'prune' | 'previewPrune' | 'referencedHashes' | 'allReferencedHashes' | 'projectReferencedHashes'>;

export function createSqlitePrune(db: Database): PruneMethods {
  // The subquery's OFFSET skips the newest `keep` versions before the protection filter applies, so
  // pinned and current versions still count toward `keep`. It walks only this path's index range.
  const pathCandidates = db.prepare(`
    SELECT c.seq, c.content_hash, c.size FROM (
      SELECT seq, version_id, project_id, path, content_hash, size, pulled, dataset FROM versions
      WHERE project_id = @projectId AND path = @path ORDER BY seq DESC LIMIT -1 OFFSET @keep
    ) c WHERE ${UNPROTECTED}`);
  // Whole project: the (project_id, path, seq) index already yields rows partitioned by path in seq
  // order, so the window needs no sort.
  const projectCandidates = db.prepare(`
    SELECT c.seq, c.content_hash, c.size FROM (
      SELECT seq, version_id, project_id, path, content_hash, size, pulled, dataset,
             row_number() OVER (PARTITION BY path ORDER BY seq DESC) AS rank
      FROM versions WHERE project_id = @projectId
    ) c WHERE c.rank > @keep AND ${UNPROTECTED}`);
  // Retention's dry run: the same candidates, counted per path instead of deleted.
  const previewByPath = db.prepare(`
    SELECT c.path, count(*) AS versions, sum(c.size) AS bytes FROM (
      SELECT seq, version_id, project_id, path, content_hash, size, pulled, dataset,
             row_number() OVER (PARTITION BY path ORDER BY seq DESC) AS rank
      FROM versions WHERE project_id = @projectId
    ) c WHERE c.rank > @keep AND ${UNPROTECTED} GROUP BY c.path`);
  const deleteVersion = db.prepare('DELETE FROM versions WHERE seq = ?');
  const firstHashes = db.prepare(
    'SELECT DISTINCT content_hash FROM versions WHERE content_hash > ? ORDER BY content_hash LIMIT ?',
  ).pluck();
  // A shard is referenced while some version references a manifest that lists it.
  const firstShards = db.prepare(
    `SELECT DISTINCT ds.shard_hash FROM dataset_shards ds
     WHERE ds.shard_hash > ? AND EXISTS (SELECT 1 FROM versions v WHERE v.content_hash = ds.manifest_hash)
     ORDER BY ds.shard_hash LIMIT ?`,
  ).pluck();

  // Content uploaded to a project for sync (migration 7) is kept like referenced content: a record
  // that uses it may follow at any time.
  const firstUploads = db.prepare(
    'SELECT DISTINCT content_hash FROM project_objects WHERE content_hash > ? ORDER BY content_hash LIMIT ?',
  ).pluck();
  const projectUploads = db.prepare('SELECT content_hash FROM project_objects WHERE project_id = ?').pluck();
  const shardsOf = db.prepare('SELECT shard_hash FROM dataset_shards WHERE manifest_hash = ?').pluck();
  // One project's rows in commit order (versions_by_project), paged by seq.
  const projectPage = db.prepare(
    'SELECT seq, content_hash, dataset FROM versions WHERE project_id = ? AND seq > ? AND content_hash IS NOT NULL ORDER BY seq LIMIT ?',
  );

  const prune = db.transaction((projectId: string, keep: number, paths: string[] | undefined, hold: number): PruneResult => {
    const candidates: Candidate[] = [];
    if (paths === undefined) {
      candidates.push(...(projectCandidates.all({ projectId, keep, hold }) as Candidate[]));
    } else {
      for (const path of new Set(paths)) candidates.push(...(pathCandidates.all({ projectId, path, keep, hold }) as Candidate[]));
    }
    const released = new Set<ContentHash>();
    let bytes = 0;
    for (const candidate of candidates) {
      deleteVersion.run(candidate.seq);
      bytes += candidate.size;
      if (candidate.content_hash === null) continue;
      // A released manifest releases its shards too (the caller re-checks each against every reference).
      if (!released.has(candidate.content_hash as ContentHash)) {
        for (const shard of shardsOf.all(candidate.content_hash) as ContentHash[]) released.add(shard);
      }
      released.add(candidate.content_hash as ContentHash);
    }
    return { prunedVersions: candidates.length, prunedBytes: bytes, releasedHashes: [...released] };
  });

  const referencedHashes = (hashes: ContentHash[]): Set<ContentHash> => {
    const found = new Set<ContentHash>();
    const unique = [...new Set(hashes)];
    for (let start = 0; start < unique.length; start += IN_CHUNK) {
      const chunk = unique.slice(start, start + IN_CHUNK);
      const statement = db
        .prepare(`SELECT DISTINCT content_hash FROM versions WHERE content_hash IN (${chunk.map(() => '?').join(', ')})`)
        .pluck();
      for (const hash of statement.all(...chunk) as ContentHash[]) found.add(hash);
      const shards = db
        .prepare(
          `SELECT DISTINCT ds.shard_hash FROM dataset_shards ds WHERE ds.shard_hash IN (${chunk.map(() => '?').join(', ')})
           AND EXISTS (SELECT 1 FROM versions v WHERE v.content_hash = ds.manifest_hash)`,
        )
        .pluck();
      for (const hash of shards.all(...chunk) as ContentHash[]) found.add(hash);
      const uploads = db.prepare(`SELECT DISTINCT content_hash FROM project_objects WHERE content_hash IN (${chunk.map(() => '?').join(', ')})`).pluck();
      for (const hash of uploads.all(...chunk) as ContentHash[]) found.add(hash);
    }
    return found;
  };

  return {
    prune: (projectId, options) =>
      run(() => {
        if (!Number.isSafeInteger(options.keep) || options.keep < 0) {
          throw new TypeError(`keep must be a non-negative integer, got ${options.keep}`);
        }
        // 0 = unlimited retention: nothing is ever pruned.
        if (options.keep === 0) return { prunedVersions: 0, prunedBytes: 0, releasedHashes: [] };
        return prune.immediate(projectId, options.keep, options.paths, options.holdAfterSeq ?? Number.MAX_SAFE_INTEGER);
      }),
    previewPrune: (projectId, options) =>
      run(() => {
        if (!Number.isSafeInteger(options.keep) || options.keep < 0) throw new TypeError(`keep must be a non-negative integer, got ${options.keep}`);
        if (options.keep === 0) return { versions: 0, bytes: 0, pathCount: 0, paths: [] };
        const rows = previewByPath.all({ projectId, keep: options.keep, hold: options.holdAfterSeq ?? Number.MAX_SAFE_INTEGER }) as PrunePreview['paths'];
        return summarizePreview(rows, options.top);
      }),
    referencedHashes: (hashes) => run(() => referencedHashes(hashes)),
    // Paged by key rather than one open .iterate(): better-sqlite3 refuses every other statement on
    // the connection while an iterator is open, and the consumer (gc, fsck) awaits between items,
    // during which writes must keep working. Each page is its own consistent read.
    // Version contents first, then dataset shards, then uploads: a hash may appear more than once.
    allReferencedHashes: async function* () {
      for (const statement of [firstHashes, firstShards, firstUploads]) {
        let after = '';
        for (;;) {
          const page = await run(() => statement.all(after, STREAM_PAGE) as ContentHash[]);
          yield* page;
          if (page.length < STREAM_PAGE) break;
          after = page[page.length - 1]!;
        }
      }
    },
    projectReferencedHashes: async function* (projectId: string) {
      // Shards are listed once per manifest: a dataset with many versions of one manifest, or many
      // manifests sharing shards, must not list the same thousand shards again per version.
      const manifests = new Set<string>();
      let after = 0;
      for (;;) {
        const page = await run(() => {
          const rows = projectPage.all(projectId, after, STREAM_PAGE) as Array<{ seq: number; content_hash: ContentHash; dataset: number }>;
          const hashes: ContentHash[] = [];
          for (const row of rows) {
            hashes.push(row.content_hash);
            if (row.dataset !== 1 || manifests.has(row.content_hash)) continue;
            manifests.add(row.content_hash);
            hashes.push(...(shardsOf.all(row.content_hash) as ContentHash[]));
          }
          return { hashes, last: rows.at(-1)?.seq, full: rows.length === STREAM_PAGE };
        });
        yield* page.hashes;
        if (!page.full || page.last === undefined) break;
        after = page.last;
      }
      yield* await run(() => projectUploads.all(projectId) as ContentHash[]);
    },
  };
}

/** Totals of per-path counts, and the `top` paths with the most bytes (then versions, then path). */
export function summarizePreview(rows: PrunePreview['paths'], top: number): PrunePreview {
  let versions = 0;
  let bytes = 0;
  for (const row of rows) {
    versions += row.versions;
    bytes += row.bytes;
  }
  const paths = [...rows]
    .sort((a, b) => b.bytes - a.bytes || b.versions - a.versions || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
    .slice(0, Math.max(0, top))
    .map((row) => ({ path: row.path, versions: row.versions, bytes: row.bytes }));
  return { versions, bytes, pathCount: rows.length, paths };
}
