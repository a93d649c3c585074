// Snapshots through sync (issue 14). A snapshot taken on a workstation — online or offline — lands on
// the server as the next snapshot of the server's linear chain, with its own id, message and time,
// pinning the files exactly as they were on that workstation when it was taken (not the server's tree
// when it arrives: other workstations' changes in between are not in it). Other workstations adopt it
// into their own chains the same way. Sending it twice records it once (its id).
import type { EngineContext } from '../context.js';
import { StrataError } from '../errors.js';
import { isUuid } from '../ids.js';
import { normalizeProjectPath } from '../paths.js';
import type { Actor, Snapshot } from '../types.js';
import { MAX_MESSAGE_LENGTH } from './snapshots.js';

/** A project of a million files can still send its snapshot in one request (~80 MB of JSON). */
export const MAX_SNAPSHOT_PINS = 1_000_000;

export interface SyncedSnapshot {
  snapshotId: string;
  message: string;
  /** when it was taken (RFC 3339) */
  timestamp: string;
  /** the files it pins: path → the version (by id) the path had */
  entries: Array<{ path: string; versionId: string }>;
  /**
   * Record it even if some pinned versions are not here (left out, their paths returned as
   * `missing`). Without it, SNAPSHOT_PINS_MISSING (422) and nothing is recorded: the versions are
   * still on their way.
   */
  partial?: boolean;
}

export type SyncedSnapshotOutcome =
  /** appended to the chain; `missing`: pinned paths whose version the project does not have (left out) */
  | { result: 'applied'; snapshot: Snapshot; missing: string[] }
  | { result: 'duplicate'; snapshot: Snapshot };

export async function recordSyncedSnapshot(
  ctx: EngineContext,
  input: { projectId: string; actor: Actor; snapshot: SyncedSnapshot },
): Promise<SyncedSnapshotOutcome> {
  await ctx.requireProject(input.projectId);
  const { snapshotId, message, timestamp, entries } = input.snapshot;
  const bad = (field: string, why: string) => new StrataError('INVALID_ARGUMENT', { message: `${field} ${why}`, details: { field } });
  if (typeof snapshotId !== 'string' || !isUuid(snapshotId)) throw bad('snapshotId', 'must be a UUID');
  if (typeof message !== 'string' || message.length > MAX_MESSAGE_LENGTH) throw bad('message', `must be a string of at most ${MAX_MESSAGE_LENGTH} characters`);
  const at = typeof timestamp === 'string' ? Date.parse(timestamp) : Number.NaN;
  if (!Number.isFinite(at)) throw bad('timestamp', 'must be RFC 3339');
  if (!Array.isArray(entries) || entries.length > MAX_SNAPSHOT_PINS) throw bad('entries', `must be an array of at most ${MAX_SNAPSHOT_PINS}`);
  const seen = new Set<string>();
  const pins = entries.map((entry, i) => {
    const path = normalizeProjectPath(entry?.path, `entries[${i}].path`);
    if (typeof entry?.versionId !== 'string' || !isUuid(entry.versionId)) throw bad(`entries[${i}].versionId`, 'must be a UUID');
    if (seen.has(path)) throw bad(`entries[${i}].path`, 'is pinned twice');
    seen.add(path);
    return { path, versionId: entry.versionId };
  });
  const existing = await ctx.repository.snapshots.get(input.projectId, snapshotId);
  if (existing !== null) return { result: 'duplicate', snapshot: existing };
  // Versions acknowledged before this call are committed first (they may be among the pins).
  await ctx.batcher.drain();
  const created = await ctx.repository.snapshots.createPinned(
    { snapshotId, projectId: input.projectId, message, actor: input.actor, timestamp: new Date(at).toISOString() },
    pins,
    { requireAll: input.snapshot.partial !== true },
  );
  return { result: 'applied', ...created };
}

/** The chain after a position, oldest first: how a workstation learns of snapshots taken elsewhere. */
export async function snapshotFeed(ctx: EngineContext, input: { projectId: string; afterSeq: number; limit: number }): Promise<{ items: Snapshot[]; more: boolean }> {
  await ctx.requireProject(input.projectId);
  const limit = Math.max(1, Math.min(1000, Math.trunc(input.limit)));
  const items = await ctx.repository.snapshots.listAfter(input.projectId, Math.max(0, Math.trunc(input.afterSeq)), limit + 1);
  return { items: items.slice(0, limit), more: items.length > limit };
}
