// Committing version records on Postgres: one record in one statement (COMMIT_ONE), a batch of
// distinct paths in one statement sent with its COMMIT (COMMIT_SET), any other batch in a fixed
// number of statements (commitBatch), each inside a transaction that holds the projects' advisory
// locks (pg-db.ts), so preconditions and path checks are judged where commits are serialized, on
// every replica. Replicas writing one project queue for its lock; what each holds it for is what
// bounds their total rate, so a batch holds it for one round trip where it can, and takes in the
// commits that queued while it waited (VersionCommitOptions.latecomers). The versions repository
// (pg-versions.ts) and a git push's chain (pg-snapshots.ts importChain) commit through here.
import type { VersionCommit, VersionCommitOptions, VersionCommitResult, WriteConflict } from '../ports/metadata-repository.js';
import type { Entry, VersionRecord } from '../types.js';
import { type PgDatabase, prepared, type Tx } from './pg-db.js';
import { checksPath, keyOf, runsForPathChecks } from './commit-runs.js';
import { INSERT_SMALL } from './pg-small-objects.js';
import { requireStorable } from './pg-sync-objects.js';
import { entryOfRecord } from './sqlite-rows.js';

/**
 * Commits a batch (VersionRepository.commit). Every project the batch touches is locked first
 * (sorted, so batches never deadlock): a concurrent writer cannot commit between our precondition
 * reads and our writes, on any replica. An atomic batch is judged whole against the committed tree
 * (its callers check related paths before they submit); any other batch, latecomers included, is
 * cut where checked paths meet (runsForPathChecks), each run in a transaction of its own.
 */
export async function pgCommit(db: PgDatabase, commits: VersionCommit[], options: VersionCommitOptions = {}): Promise<VersionCommitResult[]> {
  if (commits.length === 0) return [];
  commits.forEach(requireStorableCommit);
  if (options.atomic === true) {
    return db.tx(
      async (tx) => {
        sendContents(tx, commits);
        return commits.length === 1 ? [await pgCommitOne(tx, commits[0]!)] : commitBatch(tx, commits, true);
      },
      { projects: projectsOf(commits) },
    );
  }
  // The first transaction, once it holds the locks, takes in the latecomers (VersionCommitOptions):
  // with several replicas writing one project, it has usually waited for another replica's commit.
  let rest: VersionCommit[][] = [];
  const results = await commitRun(db, projectsOf(commits), () => {
    const late = options.latecomers?.(new Set(projectsOf(commits))) ?? [];
    late.forEach(requireStorableCommit);
    const [first, ...others] = runsForPathChecks(late.length === 0 ? commits : [...commits, ...late]);
    rest = others;
    return first!;
  });
  for (const run of rest) results.push(...(await commitRun(db, projectsOf(run), () => run)));
  return results;
}

/**
 * One run (no checked path meets a related one) in a transaction of its own. A run of distinct
 * paths, none history-only nor a dataset with shards (nearly every batch of writes), is one
 * statement sent with its COMMIT (COMMIT_SET): the project lock is held for one round trip.
 */
async function commitRun(db: PgDatabase, projects: string[], runOf: () => VersionCommit[]): Promise<VersionCommitResult[]> {
  let judged: { run: VersionCommit[]; rows: Promise<CommitSetRow[]> } | undefined;
  const direct = await db.tx(
    async (tx) => {
      const run = runOf();
      sendContents(tx, run);
      if (!settable(run)) return run.length === 1 ? [await pgCommitOne(tx, run[0]!)] : commitBatch(tx, run, false);
      judged = { run, rows: tx.send<CommitSetRow>(COMMIT_SET, commitSetValues(run)) };
      return null;
    },
    { projects },
  );
  if (direct !== null) return direct;
  const { run, rows } = judged!;
  return resultsOfSet(run, await rows);
}

/**
 * The contents that ride with their records (VersionCommit.content) go first, in one statement,
 * into the small objects' table (pg-small-objects.ts), locked and touched as that store's own puts
 * are: the records that reference them commit in the same transaction.
 */
function sendContents(tx: Tx, commits: VersionCommit[]): void {
  const carrying = commits.filter((c) => c.content !== undefined && c.record.contentHash !== null);
  if (carrying.length === 0) return;
  tx.send(INSERT_SMALL, [
    carrying.map((c) => c.record.contentHash),
    carrying.map((c) => Buffer.from(c.content!.buffer, c.content!.byteOffset, c.content!.byteLength)),
  ]);
}

function requireStorableCommit({ record, expectedCurrent, shards }: VersionCommit): void {
  requireStorable('record', record.versionId, record.restoredFrom, expectedCurrent, record.path, record.contentHash, ...(shards ?? []));
  requireStorable('actor', record.actor.id, record.actor.kind, record.actor.name);
}

function projectsOf(commits: VersionCommit[]): string[] {
  return [...new Set(commits.map((c) => c.record.projectId))];
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

// A run of distinct paths in one statement: COMMIT_ONE for a set. Each record is judged against the
// committed tree alone (its path appears once, and runsForPathChecks cut the batch where a checked
// path meets a related one), so the preconditions need no pass in JavaScript and the statement can
// go out with its COMMIT. The rows feed the insert in input order and the identity is drawn as each
// row is inserted (an INSERT never runs in parallel), so seqs follow input order.
const COMMIT_SET = prepared(`
WITH k AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[],
                       $11::text[], $12::integer[], $13::integer[], $14::integer[], $15::integer[], $16::boolean[], $17::text[], $18::boolean[])
    WITH ORDINALITY AS k(version_id, project_id, path, content_hash, size, actor_id, actor_kind, actor_name, timestamp, kind,
                         restored_from, executable, symlink, dataset, pulled, has_expected, expected, check_path, ord)
), state AS (
  SELECT k.*, e.version_id AS current,
         k.check_path AND ${directoryAt('k.project_id', 'k.path')} AS directory,
         CASE WHEN k.check_path THEN ${fileAbove('k.project_id', 'k.path')} END AS ancestor
  FROM k LEFT JOIN entries AS e ON e.project_id = k.project_id AND e.path = k.path
), accepted AS (
  SELECT * FROM state WHERE (NOT has_expected OR current IS NOT DISTINCT FROM expected) AND NOT directory AND ancestor IS NULL
), ins AS (
  INSERT INTO versions (version_id, project_id, path, content_hash, size, actor_id, actor_kind, actor_name, timestamp, kind, restored_from, executable, symlink, dataset, base_version_id, pulled)
  SELECT version_id, project_id, path, content_hash, size, actor_id, actor_kind, actor_name, timestamp, kind, restored_from, executable, symlink, dataset, current, pulled
  FROM accepted ORDER BY ord
  RETURNING version_id, seq
), put AS (
  INSERT INTO entries (project_id, path, version_seq, version_id, content_hash, size, timestamp, executable, symlink, dataset)
  SELECT a.project_id, a.path, ins.seq, a.version_id, a.content_hash, a.size, a.timestamp, a.executable, a.symlink, a.dataset
  FROM accepted AS a JOIN ins ON ins.version_id = a.version_id WHERE a.content_hash IS NOT NULL
  ON CONFLICT (project_id, path) DO UPDATE SET version_seq = excluded.version_seq, version_id = excluded.version_id,
    content_hash = excluded.content_hash, size = excluded.size, timestamp = excluded.timestamp, executable = excluded.executable,
    symlink = excluded.symlink, dataset = excluded.dataset
), gone AS (
  DELETE FROM entries AS e USING accepted AS a WHERE a.content_hash IS NULL AND e.project_id = a.project_id AND e.path = a.path
)
SELECT s.current, s.directory, s.ancestor, ins.seq FROM state AS s LEFT JOIN ins ON ins.version_id = s.version_id ORDER BY s.ord`);

interface CommitSetRow {
  current: string | null;
  directory: boolean;
  ancestor: string | null;
  seq: number | null;
}

/** Whether COMMIT_SET can commit the run: distinct paths, nothing history-only, no shards to record. */
function settable(run: VersionCommit[]): boolean {
  const keys = new Set<string>();
  for (const commit of run) {
    if (commit.historyOnly === true || shardsOf(commit).length > 0) return false;
    const key = keyOf(commit.record.projectId, commit.record.path);
    if (keys.has(key)) return false;
    keys.add(key);
  }
  return true;
}

function commitSetValues(run: VersionCommit[]): unknown[][] {
  return columnsOf(
    run.map((c) => [...recordValues(c.record), flag(c.pulled === true), c.expectedCurrent !== undefined, c.expectedCurrent ?? null, checksPath(c)]),
  );
}

/** COMMIT_SET's rows (one per record, in order) as results, reported as pgCommitOne reports them. */
function resultsOfSet(run: VersionCommit[], rows: CommitSetRow[]): VersionCommitResult[] {
  return run.map((commit, index) => {
    const row = rows[index]!;
    if (row.seq === null) {
      const preconditionHeld = commit.expectedCurrent === undefined || commit.expectedCurrent === row.current;
      const conflict = conflictOf(row);
      return preconditionHeld && conflict !== null ? { ok: false, code: 'PATH_CONFLICT', conflict } : stale(row.current);
    }
    return { ok: true, entry: entryOf(commit) };
  });
}

// Any other batch (a path twice, history-only records, shards, an atomic group) costs two round trips,
// not one per record: one read of the current entries of every path it touches (and of what is in
// the way of the paths it must check), the preconditions checked here in input order (each record
// sees the ones before it in the batch), then, sent with the COMMIT, one insert of all accepted
// versions, one of their shards, and one upsert and one delete for each path's final state. Nothing
// is written before every precondition is known, so an atomic batch that fails needs no savepoint.
const BATCH_STATE = prepared(`
  SELECT k.project_id, k.path, e.version_id,
         k.check_path AND ${directoryAt('k.project_id', 'k.path')} AS directory,
         CASE WHEN k.check_path THEN ${fileAbove('k.project_id', 'k.path')} END AS ancestor
  FROM unnest($1::text[], $2::text[], $3::boolean[]) AS k(project_id, path, check_path)
  LEFT JOIN entries AS e ON e.project_id = k.project_id AND e.path = k.path`);
// Seqs follow input order, as in COMMIT_SET (history and the sync feed depend on it).
const INSERT_VERSIONS = prepared(`
  INSERT INTO versions (version_id, project_id, path, content_hash, size, actor_id, actor_kind, actor_name, timestamp, kind, restored_from, executable, symlink, dataset, base_version_id, pulled)
  SELECT version_id, project_id, path, content_hash, size, actor_id, actor_kind, actor_name, timestamp, kind, restored_from, executable, symlink, dataset, base_version_id, pulled
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[],
              $12::integer[], $13::integer[], $14::integer[], $15::text[], $16::integer[])
    WITH ORDINALITY AS u(version_id, project_id, path, content_hash, size, actor_id, actor_kind, actor_name, timestamp, kind, restored_from, executable, symlink, dataset, base_version_id, pulled, ord)
  ORDER BY ord`);
const INSERT_SHARDS = `
  INSERT INTO dataset_shards (manifest_hash, shard_hash) SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING`;
// One row per path (its batch's last record): ON CONFLICT DO UPDATE may not touch a row twice.
const UPSERT_ENTRIES = prepared(`
  INSERT INTO entries (project_id, path, version_seq, version_id, content_hash, size, timestamp, executable, symlink, dataset)
  SELECT k.project_id, k.path, v.seq, k.version_id, k.content_hash, k.size, k.timestamp, k.executable, k.symlink, k.dataset
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::integer[], $8::integer[], $9::integer[])
         AS k(project_id, path, version_id, content_hash, size, timestamp, executable, symlink, dataset)
  JOIN versions AS v ON v.version_id = k.version_id
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

  tx.send(INSERT_VERSIONS, columnsOf(accepted.map((a) => [...recordValues(a.commit.record), a.base, flag(a.commit.pulled === true)])));

  const manifests: string[] = [];
  const shards: string[] = [];
  for (const { commit } of accepted) {
    for (const shard of shardsOf(commit)) {
      manifests.push(commit.record.contentHash!);
      shards.push(shard);
    }
  }
  if (shards.length > 0) tx.send(INSERT_SHARDS, [manifests, shards]);

  const finals = [...finalOf.values()].map((c) => c.record);
  const puts = finals.filter((r) => r.contentHash !== null);
  const gone = finals.filter((r) => r.contentHash === null);
  if (puts.length > 0) {
    const rows = puts.map((r) => [r.projectId, r.path, r.versionId, r.contentHash, r.size, r.timestamp, flag(r.executable), flag(r.symlink), flag(r.dataset)]);
    tx.send(UPSERT_ENTRIES, columnsOf(rows));
  }
  if (gone.length > 0) tx.send(DELETE_ENTRIES, [gone.map((r) => r.projectId), gone.map((r) => r.path)]);
  return results;
}

function conflictOf(row: { directory: boolean; ancestor: string | null }): WriteConflict | null {
  if (row.directory) return { kind: 'directory' };
  return row.ancestor === null ? null : { kind: 'file-ancestor', ancestor: row.ancestor };
}
