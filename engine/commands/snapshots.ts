import type { EngineContext } from '../context.js';
import { StrataError } from '../errors.js';
import { findSnapshot } from './resolve-ids.js';
import type { Actor, DiffItem, Page, Snapshot, SnapshotEntry } from '../types.js';
import { clampLimit } from './history.js';

export const MAX_MESSAGE_LENGTH = 10_000;

/** Pins every path's current version. Atomic in the repository: concurrent writes are wholly in or out. */
export async function createSnapshot(ctx: EngineContext, input: { projectId: string; message?: string; actor: Actor }): Promise<Snapshot> {
  const message = input.message ?? '';
  if (typeof message !== 'string' || message.length > MAX_MESSAGE_LENGTH) {
    throw new StrataError('INVALID_ARGUMENT', { message: `message must be a string of at most ${MAX_MESSAGE_LENGTH} characters`, details: { field: 'message' } });
  }
  await ctx.requireProject(input.projectId);
  // Writes acknowledged before this call must be in the snapshot: wait for their batch to commit.
  await ctx.batcher.drain();
  return ctx.repository.snapshots.create({
    snapshotId: ctx.ids.uuid(),
    projectId: input.projectId,
    message,
    actor: input.actor,
    timestamp: ctx.now(),
  });
}

export async function listSnapshots(ctx: EngineContext, input: { projectId: string; cursor?: string; limit?: number }): Promise<Page<Snapshot>> {
  await ctx.requireProject(input.projectId);
  return ctx.repository.snapshots.list(input.projectId, { limit: clampLimit(input.limit), ...(input.cursor ? { cursor: input.cursor } : {}) });
}

/**
 * A snapshot by id, tag, number or abbreviated id (resolve-ids.ts). Ids and tags cannot be confused:
 * a tag may not look like a UUID.
 */
export async function getSnapshot(ctx: EngineContext, projectId: string, idOrTag: string): Promise<Snapshot> {
  await ctx.requireProject(projectId);
  const snapshot = await findSnapshot(ctx, projectId, idOrTag);
  if (!snapshot) throw new StrataError('SNAPSHOT_NOT_FOUND', { details: { snapshotId: idOrTag } });
  return snapshot;
}

export async function snapshotEntries(
  ctx: EngineContext,
  input: { projectId: string; snapshotId: string; prefix?: string; cursor?: string; limit?: number },
): Promise<Page<SnapshotEntry>> {
  const snapshot = await getSnapshot(ctx, input.projectId, input.snapshotId);
  return ctx.repository.snapshots.entries(snapshot.snapshotId, {
    limit: clampLimit(input.limit),
    ...(input.prefix ? { prefix: input.prefix } : {}),
    ...(input.cursor ? { cursor: input.cursor } : {}),
  });
}

export async function diffSnapshots(ctx: EngineContext, input: { projectId: string; from: string; to?: string }): Promise<DiffItem[]> {
  const from = await getSnapshot(ctx, input.projectId, input.from);
  const to = input.to === undefined || input.to === '' ? null : await getSnapshot(ctx, input.projectId, input.to);
  if (to === null) await ctx.batcher.drain();
  return ctx.repository.snapshots.diff(input.projectId, from.snapshotId, to ? to.snapshotId : null);
}
