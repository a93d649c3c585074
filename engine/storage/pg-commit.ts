// Committing version records on Postgres: one record in one statement (COMMIT_ONE), a batch in a
// fixed number of statements (commitBatch), each inside a transaction that holds the projects'
// advisory locks (pg-db.ts), so preconditions and path checks are judged where commits are
// serialized, on every replica. The versions repository (pg-versions.ts) and a git push's chain
// (pg-snapshots.ts importChain) commit through here.
import type { VersionCommit, VersionCommitResult, WriteConflict } from '../ports/metadata-repository.js';
import type { Entry, VersionRecord } from '../types.js';
import { type PgDatabase, prepared, type Tx } from './pg-db.js';
import { requireStorable } from './pg-sync-objects.js';
import { entryOfRecord } from './sqlite-rows.js';

/**
 * Commits a batch (VersionRepository.commit). Every project the batch touches is locked first
 * (sorted, so batches never deadlock): a concurrent writer cannot commit between our precondition
 * reads and our writes, on any replica. An atomic batch is judged whole against the committed tree
 * (its callers check related paths before they submit); any other batch is cut where checked paths
 * meet (runsForPathChecks), each run in a transaction of its own.
 */
export async function pgCommit(db: PgDatabase, commits: VersionCommit[], atomic: boolean): Promise<VersionCommitResult[]> {
  if (commits.length === 0) return [];
  for (const { record, expectedCurrent, shards } of commits) {
    requireStorable('record', record.versionId, record.restoredFrom, expectedCurrent, record.path, record.contentHash, ...(shards ?? []));
    requireStorable('actor', record.actor.id, record.actor.kind, record.actor.name);
  }
  const results: VersionCommitResult[] = [];
  for (const run of atomic ? [commits] : runsForPathChecks(commits)) {
    results.push(
      ...(await db.tx(async (tx) => (run.length === 1 ? [await pgCommitOne(tx, run[0]!)] : commitBatch(tx, run, atomic)), {
        projects: run.map((c) => c.record.projectId),
      })),
    );
  }
  return results;
}

/** Told a committed record's version seq, and the size of the entry it replaced (null: none). */
export type PgCommitted = (seq: number, previousSize: number | null) => void;

// The conflict check of a path (VersionCommit.checkPath) in SQL, for a path `p` of project `pid`: an
// entry below 'p/' (a directory there), and the entry at an ancestor nearest the root (a file above).
const directoryAt = (pid: string, p: string) => `EXISTS (SELECT 1 FROM entries AS d WHERE d.project_id = ${pid} AND d.path >= ${p} || '/' AND d.path < ${p} || '0')`;
const fileAbove = (pid: string, p: string) => `(SELECT min(f.path) FROM generate_series(1, length(${p})) AS g(n)
    JOIN entries AS f ON f.project_id = ${pid} AND f.path = left(${p}, g.n - 1) WHERE substr(${p}, g.n, 1) = '/')`;
// One commit is ONE statement (one round trip): the precondition, the version row, its shards and the
// entry change are data-modifying CTEs that all see the statement's snapshot. The caller's transaction
// holds the project's advisory lock (pg-db.ts), so nothing changes the entry between the read in
// `prev` and the writes. Every parameter is cast: in INSERT … SELECT Postgres would type them text.
const COMMIT_ONE = prepared(`
WITH prev AS (
  SELECT version_id, size FROM entries WHERE project_id = $2::text AND path = $3::text AND NOT $16::boolean
), state AS (
  SELECT (SELECT version_id FROM prev) AS current, (SELECT size FROM prev) AS previous_size,
         $20::boolean AND ${directoryAt('$2::text', '$3::text')} AS directory,
         CASE WHEN $20::boolean THEN ${fileAbove('$2::text', '$3::text')} END AS ancestor
), ins AS (
  INSERT INTO versions (version_id, project_id, path, content_hash, size, actor_id, actor_kind, actor_name, timestamp, kind, restored_from, executable, symlink, dataset, base_version_id, pulled)
  SELECT $1::text, $2::text, $3::text, $4::text, $5::bigint, $6::text, $7::text, $8::text, $9::text, $10::text, $11::text,
         $12::integer, $13::integer, $14::integer, state.current, $15::integer
  FROM state
  WHERE ($16::boolean OR NOT $17::boolean OR state.current IS NOT DISTINCT FROM $18::text) AND NOT state.directory AND state.ancestor IS NULL
  RETURNING seq
), shards AS (
  INSERT INTO dataset_shards (manifest_hash, shard_hash)
  SELECT $4::text, shard FROM ins, unnest($19::text[]) AS shard
  ON CONFLICT DO NOTHING
), put AS (
  INSERT INTO entries (project_id, path, version_seq, version_id, content_hash, size, timestamp, executable, symlink, dataset)
  SELECT $2::text, $3::text, ins.seq, $1::text, $4::text, $5::bigint, $9::text, $12::integer, $13::integer, $14::integer
  FROM ins WHERE NOT $16::boolean AND $4::text IS NOT NULL
  ON CONFLICT (project_id, path) DO UPDATE SET version_seq = excluded.version_seq, version_id = excluded.version_id,
    content_hash = excluded.content_hash, size = excluded.size, timestamp = excluded.timestamp, executable = excluded.executable,
    symlink = excluded.symlink, dataset = excluded.dataset
), gone AS (
  DELETE FROM entries
  WHERE project_id = $2::text AND path = $3::text AND NOT $16::boolean AND $4::text IS NULL AND EXISTS (SELECT 1 FROM ins)
)
SELECT state.current, state.previous_size, (SELECT seq FROM ins) AS seq, state.directory, state.ancestor FROM state`);

const flag = (value: boolean): number => (value ? 1 : 0);
// NUL cannot occur in Postgres text, so it cannot occur in a project id or path: a safe separator.
const keyOf = (projectId: string, path: string): string => `${projectId}\u0000${path}`;
const stale = (currentVersionId: string | null): VersionCommitResult => ({ ok: false, code: 'STALE_BASE_VERSION', currentVersionId });

/** A record's values in the order of the versions columns $1..$14 of COMMIT_ONE and INSERT_VERSIONS. */
function recordValues(r: VersionRecord): unknown[] {
  return [r.versionId, r.projectId, r.path, r.contentHash, r.size, r.actor.id, r.actor.kind, r.actor.name, r.timestamp, r.kind, r.restoredFrom, flag(r.executable), flag(r.symlink), flag(r.dataset)];
}

/** Rows to the column arrays that unnest() turns back into rows: one parameter per column. */
function columnsOf(rows: unknown[][]): unknown[][] {
  return rows[0]!.map((_, column) => rows.map((row) => row[column]));
}

interface CommitOneRow {
  current: string | null;
  previous_size: number | null;
  seq: number | null;
  directory: boolean;
  ancestor: string | null;
}

/** The entry a committed record makes current (null: a tombstone or a history-only record). */
function entryOf(commit: VersionCommit): Entry | null {
  const { record } = commit;
  if (commit.historyOnly === true || record.contentHash === null) return null;
  return entryOfRecord({ ...record, contentHash: record.contentHash });
}

/** Dataset shards to record with a commit (none unless the record is a dataset with content). */
function shardsOf(commit: VersionCommit): string[] {
  return commit.record.dataset && commit.record.contentHash !== null ? [...new Set(commit.shards ?? [])] : [];
}

/**
 * Commits one version record (and its entry) with its precondition checked, inside the caller's
 * transaction, which must hold the record's project lock (`db.tx(…, { projects: [projectId] })`):
 * the versions repository, and a git push's whole chain (importChain). The replaced version is always
 * read: it is the record's base in the sync outbox (migration 8).
 */
export async function pgCommitOne(tx: Tx, commit: VersionCommit, committed?: PgCommitted): Promise<VersionCommitResult> {
  const { record } = commit;
  const row = (await tx.one<CommitOneRow>(COMMIT_ONE, [
    ...recordValues(record),
    flag(commit.pulled === true),
    commit.historyOnly === true,
    commit.expectedCurrent !== undefined,
    commit.expectedCurrent ?? null,
    shardsOf(commit),
    checksPath(commit),
  ]))!;
  if (row.seq === null) {
    // The precondition is reported first, as SQLite's committer does.
    const preconditionHeld = commit.historyOnly === true || commit.expectedCurrent === undefined || commit.expectedCurrent === row.current;
    const conflict = conflictOf(row);
    return preconditionHeld && conflict !== null ? { ok: false, code: 'PATH_CONFLICT', conflict } : stale(row.current);
  }
  committed?.(row.seq, row.previous_size);
  return { ok: true, entry: entryOf(commit) };
}

// A batch of more than one record costs a fixed number of statements, not one per record: one read
// of the current entries of every path it touches (and of what is in the way of the paths it must
// check), the preconditions checked here in input order
// (each record sees the ones before it in the batch), then one insert of all accepted versions, one
// of their shards, and one upsert and one delete for each path's final state. Nothing is written
// before every precondition is known, so an atomic batch that fails needs no savepoint.
const BATCH_STATE = prepared(`
  SELECT k.project_id, k.path, e.version_id,
         k.check_path AND ${directoryAt('k.project_id', 'k.path')} AS directory,
         CASE WHEN k.check_path THEN ${fileAbove('k.project_id', 'k.path')} END AS ancestor
  FROM unnest($1::text[], $2::text[], $3::boolean[]) AS k(project_id, path, check_path)
  LEFT JOIN entries AS e ON e.project_id = k.project_id AND e.path = k.path`);
// The rows come out of unnest in array order and the identity is drawn as each row is inserted, so
// seqs follow input order (checked below: history and the sync feed depend on it).
const INSERT_VERSIONS = prepared(`
  INSERT INTO versions (version_id, project_id, path, content_hash, size, actor_id, actor_kind, actor_name, timestamp, kind, restored_from, executable, symlink, dataset, base_version_id, pulled)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[],
                       $12::integer[], $13::integer[], $14::integer[], $15::text[], $16::integer[])
  RETURNING version_id, seq`);
const INSERT_SHARDS = `
  INSERT INTO dataset_shards (manifest_hash, shard_hash) SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING`;
// One row per path (its batch's last record): ON CONFLICT DO UPDATE may not touch a row twice.
const UPSERT_ENTRIES = prepared(`
  INSERT INTO entries (project_id, path, version_seq, version_id, content_hash, size, timestamp, executable, symlink, dataset)
  SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::bigint[], $7::text[], $8::integer[], $9::integer[], $10::integer[])
  ON CONFLICT (project_id, path) DO UPDATE SET version_seq = excluded.version_seq, version_id = excluded.version_id,
    content_hash = excluded.content_hash, size = excluded.size, timestamp = excluded.timestamp, executable = excluded.executable,
    symlink = excluded.symlink, dataset = excluded.dataset`);
const DELETE_ENTRIES = `
  DELETE FROM entries e USING unnest($1::text[], $2::text[]) AS k(project_id, path) WHERE e.project_id = k.project_id AND e.path = k.path`;

async function commitBatch(tx: Tx, commits: VersionCommit[], atomic: boolean): Promise<VersionCommitResult[]> {
  const keys = new Map<string, { projectId: string; path: string; check: boolean }>();
  for (const commit of commits) {
    const { projectId, path } = commit.record;
    const key = keyOf(projectId, path);
    keys.set(key, { projectId, path, check: checksPath(commit) || keys.get(key)?.check === true });
  }
  const targets = [...keys.values()];
  // One statement: each path's current version and, for a path to check, what is in its way. The
  // batch was cut so that no other record of it changes the answer (runsForPathChecks).
  const committedState = new Map<string, string>();
  const blocked = new Map<string, WriteConflict>();
  const rows = await tx.query<{ project_id: string; path: string; version_id: string | null; directory: boolean | null; ancestor: string | null }>(BATCH_STATE, [
    targets.map((t) => t.projectId),
    targets.map((t) => t.path),
    targets.map((t) => t.check),
  ]);
  for (const row of rows) {
    const key = keyOf(row.project_id, row.path);
    if (row.version_id !== null) committedState.set(key, row.version_id);
    const conflict = conflictOf({ directory: row.directory === true, ancestor: row.ancestor });
    if (conflict !== null) blocked.set(key, conflict);
  }
  const conflicts = new Map<VersionCommit, WriteConflict>();
  for (const commit of commits) {
    const conflict = checksPath(commit) ? blocked.get(keyOf(commit.record.projectId, commit.record.path)) : undefined;
    if (conflict !== undefined) conflicts.set(commit, conflict);
  }

  const state = new Map<string, string | null>(committedState);
  const results: VersionCommitResult[] = [];
  const accepted: Array<{ commit: VersionCommit; base: string | null }> = [];
  const finalOf = new Map<string, VersionCommit>();
  for (const commit of commits) {
    const { record } = commit;
    if (commit.historyOnly === true) {
      // History only: no precondition, no entry change, and no base (as sqlite-versions.ts).
      accepted.push({ commit, base: null });
      results.push({ ok: true, entry: null });
      continue;
    }
    const key = keyOf(record.projectId, record.path);
    const current = state.get(key) ?? null;
    if (commit.expectedCurrent !== undefined && commit.expectedCurrent !== current) {
      results.push(stale(current));
      continue;
    }
    const conflict = conflicts.get(commit);
    if (conflict !== undefined) {
      results.push({ ok: false, code: 'PATH_CONFLICT', conflict });
      continue;
    }
    accepted.push({ commit, base: current });
    state.set(key, record.contentHash === null ? null : record.versionId);
    finalOf.set(key, commit);
    results.push({ ok: true, entry: entryOf(commit) });
  }
  if (accepted.length < commits.length && atomic) {
    // Every record reports its path's committed current version, never an id of this batch.
    return commits.map((commit): VersionCommitResult => {
      const conflict = conflicts.get(commit);
      if (conflict !== undefined) return { ok: false, code: 'PATH_CONFLICT', conflict };
      return stale(committedState.get(keyOf(commit.record.projectId, commit.record.path)) ?? null);
    });
  }
  if (accepted.length === 0) return results;

  const records = accepted.map((a) => a.commit.record);
  const inserted = await tx.query<{ version_id: string; seq: number }>(
    INSERT_VERSIONS,
    columnsOf(accepted.map((a) => [...recordValues(a.commit.record), a.base, flag(a.commit.pulled === true)])),
  );
  const seqOf = new Map(inserted.map((row) => [row.version_id, row.seq]));
  let previousSeq = 0;
  for (const record of records) {
    const seq = seqOf.get(record.versionId)!;
    if (!(seq > previousSeq)) throw new Error('versions were numbered out of input order');
    previousSeq = seq;
  }

  const manifests: string[] = [];
  const shards: string[] = [];
  for (const { commit } of accepted) {
    for (const shard of shardsOf(commit)) {
      manifests.push(commit.record.contentHash!);
      shards.push(shard);
    }
  }
  if (shards.length > 0) await tx.query(INSERT_SHARDS, [manifests, shards]);

  const finals = [...finalOf.values()].map((c) => c.record);
  const puts = finals.filter((r) => r.contentHash !== null);
  const gone = finals.filter((r) => r.contentHash === null);
  if (puts.length > 0) {
    const rows = puts.map((r) => [r.projectId, r.path, seqOf.get(r.versionId), r.versionId, r.contentHash, r.size, r.timestamp, flag(r.executable), flag(r.symlink), flag(r.dataset)]);
    await tx.query(UPSERT_ENTRIES, columnsOf(rows));
  }
  if (gone.length > 0) await tx.query(DELETE_ENTRIES, [gone.map((r) => r.projectId), gone.map((r) => r.path)]);
  return results;
}

/** Whether the record's path must be free of a directory and of files above it (VersionCommit.checkPath). */
function checksPath(commit: VersionCommit): boolean {
  return commit.checkPath === true && commit.historyOnly !== true && commit.record.contentHash !== null;
}

function conflictOf(row: { directory: boolean; ancestor: string | null }): WriteConflict | null {
  if (row.directory) return { kind: 'directory' };
  return row.ancestor === null ? null : { kind: 'file-ancestor', ancestor: row.ancestor };
}

/**
 * A batch cut where a record whose path is checked meets a path of the run that is the same, above
 * or below it (in either order). Within a run, each checked path's conflicts then depend on the tree
 * as committed before the run alone, which one set-wise query can judge; the runs commit in order.
 * Batches of unrelated paths (nearly all) stay whole.
 */
function runsForPathChecks(commits: VersionCommit[]): VersionCommit[][] {
  if (!commits.some(checksPath)) return [commits];
  const runs: VersionCommit[][] = [];
  let run: VersionCommit[] = [];
  const paths = new Set<string>();
  const checked = new Set<string>();
  const above = new Set<string>();
  const aboveChecked = new Set<string>();
  for (const commit of commits) {
    const { projectId, path } = commit.record;
    const ancestors = ancestorKeys(projectId, path);
    const key = keyOf(projectId, path);
    const check = checksPath(commit);
    const related = check
      ? paths.has(key) || above.has(key) || ancestors.some((a) => paths.has(a))
      : checked.has(key) || aboveChecked.has(key) || ancestors.some((a) => checked.has(a));
    if (related && run.length > 0) {
      runs.push(run);
      run = [];
      for (const set of [paths, checked, above, aboveChecked]) set.clear();
    }
    run.push(commit);
    paths.add(key);
    for (const a of ancestors) above.add(a);
    if (check) {
      checked.add(key);
      for (const a of ancestors) aboveChecked.add(a);
    }
  }
  runs.push(run);
  return runs;
}

function ancestorKeys(projectId: string, path: string): string[] {
  const keys: string[] = [];
  for (let slash = path.indexOf('/'); slash !== -1; slash = path.indexOf('/', slash + 1)) keys.push(keyOf(projectId, path.slice(0, slash)));
  return keys;
}
