import type { SnapshotCreate } from '../ports/metadata-repository.js';
import type { Snapshot } from '../types.js';
import type { Tx } from './pg-db.js';

// Taking a snapshot inside the caller's transaction, which holds the project's advisory lock
// (pg-db.ts): every writer of the project takes it too, so the chain's tip and the entries table do
// not move while this runs (parent = tip, seq = tip + 1 across replicas; a concurrent batch is wholly
// in the snapshot or wholly after it). Storage as in sqlite-snapshots.ts (migrations 5 and 6): most
// snapshots are their change set on top of a checkpoint, so a snapshot costs its changes, not a copy
// of the tree; a checkpoint copies the entries with one INSERT … SELECT.

/**
 * A snapshot is a checkpoint (a full copy of its entries) after this many built on the previous one,
 * or once their change sets together name more than a quarter of the files (but at least
 * MIN_CHAIN_CHANGES): reading a snapshot then costs at most its checkpoint plus a bounded chain.
 */
const MAX_CHAIN = 64;
const MIN_CHAIN_CHANGES = 4_096;

export interface Totals {
  file_count: number;
  total_size: number;
}

/** The tip as creating a child needs it. */
export interface Tip {
  snap: number;
  snapshot_id: string;
  seq: number;
  watermark: number | null;
  /** the checkpoint the tip is built on (itself when it is one) */
  checkpoint: number;
  /** change rows from the checkpoint to the tip (0 for a checkpoint) */
  chain_changes: number;
  /** snapshots built on that checkpoint */
  chain_length: number;
}

const TIP = `SELECT t.snap, t.snapshot_id, t.seq, t.watermark, coalesce(t.base, t.snap) AS checkpoint, t.chain_changes,
  (SELECT count(*) FROM snapshots c WHERE c.base = coalesce(t.base, t.snap)) AS chain_length
  FROM snapshots t WHERE t.project_id = $1 ORDER BY t.seq DESC LIMIT 1`;

export async function tipOf(tx: Tx, projectId: string): Promise<Tip | null> {
  return (await tx.one<Tip>(TIP, [projectId])) ?? null;
}

/**
 * Appends a snapshot row after the chain's tip (the next seq, the tip as parent): local snapshots and
 * those that come through sync share the chain and its numbering. Returns its internal key.
 */
export async function appendSnapshot(
  tx: Tx,
  input: SnapshotCreate,
  tip: Pick<Tip, 'snapshot_id' | 'seq'> | null,
  counts: { fileCount: number; totalSize: number },
  watermark: number | null,
): Promise<{ snap: number; snapshot: Snapshot }> {
  const parentId = tip?.snapshot_id ?? null;
  const seq = (tip?.seq ?? 0) + 1;
  const { actor } = input;
  const git = input.git === undefined ? null : JSON.stringify(input.git);
  const row = await tx.one<{ snap: number }>(
    `INSERT INTO snapshots (snapshot_id, project_id, parent_id, seq, message, actor_id, actor_kind, actor_name, timestamp, file_count, total_size, git_ident, watermark)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING snap`,
    [input.snapshotId, input.projectId, parentId, seq, input.message, actor.id, actor.kind, actor.name, input.timestamp, counts.fileCount, counts.totalSize, git, watermark],
  );
  const snapshot: Snapshot = {
    snapshotId: input.snapshotId,
    projectId: input.projectId,
    parentId,
    seq,
    message: input.message,
    actor: { ...actor },
    timestamp: input.timestamp,
    tags: [],
    fileCount: counts.fileCount,
    totalSize: counts.totalSize,
  };
  if (input.git !== undefined) snapshot.git = { ...input.git };
  return { snap: row!.snap, snapshot };
}

// The paths whose version differs from the parent's: the parent's version of a path is the last change
// its chain made to it (snapshot_changes_by_path: the path's rows between the checkpoint and the
// parent, newest first — snap numbers grow with seq), else what its checkpoint pins (pe). 0 stands for
// "no version" (seqs start at 1). The candidates are the paths with a version in (parent watermark,
// watermark]: a range of versions_by_project, proportional to the writes since the parent. Each is
// looked up by key (LATERAL … LIMIT 1): left to itself the planner hashed the checkpoint's whole
// snapshot_entries (35 ms at 100,000 files for a handful of changes), a cost of the tree, not of them.
const RECORD_CHANGES = `
WITH ins AS (
  INSERT INTO snapshot_changes (snap, path, version_seq)
  SELECT $1::bigint, c.path, e.version_seq
  FROM (SELECT DISTINCT path FROM versions WHERE project_id = $2::text AND seq > $3::bigint AND seq <= $4::bigint) c
  LEFT JOIN LATERAL (SELECT version_seq FROM entries WHERE project_id = $2::text AND path = c.path LIMIT 1) e ON true
  LEFT JOIN LATERAL (SELECT version_seq FROM snapshot_entries WHERE snap = $5::bigint AND path = c.path LIMIT 1) pe ON true
  WHERE coalesce(e.version_seq, 0) IS DISTINCT FROM coalesce(
    (SELECT coalesce(sc.version_seq, 0) FROM snapshot_changes sc JOIN snapshots s ON s.snap = sc.snap
     WHERE sc.path = c.path AND sc.snap > $5::bigint AND sc.snap <= $6::bigint AND s.base = $5::bigint
     ORDER BY sc.snap DESC LIMIT 1),
    pe.version_seq, 0)
  RETURNING 1
) SELECT count(*) AS n FROM ins`;

/** What importChain knows already, so that a pushed chain of hundreds of snapshots queries less. */
export interface Known {
  /** the project's entry count and size */
  totals: Totals;
  /** the tip (null: none), when it is the snapshot the previous step created */
  tip?: Tip | null;
  /** the paths this snapshot's step wrote, in order (seq; null for a tombstone) */
  written: Array<{ path: string; seq: number | null }>;
}

/** Pins every current entry of the project; the caller's transaction holds the project's lock. */
export async function createSnapshot(tx: Tx, input: SnapshotCreate, known?: Known): Promise<{ snap: number; snapshot: Snapshot; tip: Tip }> {
  const tip = known?.tip === undefined ? await tipOf(tx, input.projectId) : known.tip;
  // The entry totals (unless importChain kept them) and the watermark, in one statement.
  const state =
    known === undefined
      ? (await tx.one<Totals & { watermark: number }>(
          `SELECT count(*) AS file_count, coalesce(sum(size), 0) AS total_size,
             (SELECT coalesce(max(seq), 0) FROM versions WHERE project_id = $1) AS watermark
           FROM entries WHERE project_id = $1`,
          [input.projectId],
        ))!
      : { ...known.totals, ...(await tx.one<{ watermark: number }>('SELECT coalesce(max(seq), 0) AS watermark FROM versions WHERE project_id = $1', [input.projectId]))! };
  const { file_count, total_size, watermark } = state;
  const { snap, snapshot } = await appendSnapshot(tx, input, tip, { fileCount: file_count, totalSize: total_size }, watermark);
  const parentWatermark = tip === null ? null : tip.watermark;
  let changes = 0;
  if (tip !== null && parentWatermark !== null) {
    changes = await recordChanges(tx, { snap, projectId: input.projectId, from: parentWatermark, to: watermark, tip, written: known?.written });
  }
  // Built on the parent's checkpoint when the parent's changes are known (it has a watermark) and the
  // chain is still short: a snapshot costs its changes, not a copy of the tree.
  const chained = tip === null || tip.checkpoint === tip.snap ? changes : tip.chain_changes + changes;
  const delta = tip !== null && parentWatermark !== null && tip.chain_length < MAX_CHAIN && chained <= Math.max(MIN_CHAIN_CHANGES, file_count / 4);
  if (delta) {
    await tx.query('UPDATE snapshots SET base = $1, chain_changes = $2 WHERE snap = $3', [tip.checkpoint, chained, snap]);
  } else {
    // The entries' primary key is (project_id, path): rows come in snapshot_entries' key order.
    await tx.query('INSERT INTO snapshot_entries (snap, path, version_seq) SELECT $1::bigint, path, version_seq FROM entries WHERE project_id = $2 ORDER BY path', [snap, input.projectId]);
  }
  const self: Tip = {
    snap,
    snapshot_id: snapshot.snapshotId,
    seq: snapshot.seq,
    watermark,
    checkpoint: delta ? tip.checkpoint : snap,
    chain_changes: delta ? chained : 0,
    chain_length: delta ? tip.chain_length + 1 : 0,
  };
  return { snap, snapshot, tip: self };
}

async function recordChanges(
  tx: Tx,
  at: { snap: number; projectId: string; from: number; to: number; tip: Tip; written: Known['written'] | undefined },
): Promise<number> {
  const { written } = at;
  if (written !== undefined) {
    // A step's versions are all the project got since its parent (no other writer came between): its
    // paths are the change set, and the query that works it out from the versions is not needed.
    const between = await tx.one<{ n: number }>('SELECT count(*) AS n FROM versions WHERE project_id = $1 AND seq > $2 AND seq <= $3', [at.projectId, at.from, at.to]);
    if (between!.n === written.length) {
      // A path written twice in one step (not something a git commit does) is its last write.
      const last = new Map<string, number | null>();
      for (const { path, seq } of written) last.set(path, seq);
      if (last.size > 0) {
        await tx.query('INSERT INTO snapshot_changes (snap, path, version_seq) SELECT $1::bigint, path, seq FROM unnest($2::text[], $3::bigint[]) AS w (path, seq)', [
          at.snap,
          [...last.keys()],
          [...last.values()],
        ]);
      }
      return last.size;
    }
  }
  const row = await tx.one<{ n: number }>(RECORD_CHANGES, [at.snap, at.projectId, at.from, at.to, at.tip.checkpoint, at.tip.snap]);
  return row!.n;
}
