import type { EngineContext } from '../context.js';
import { StrataError } from '../errors.js';
import { withReserve } from './gc.js';
import type { PrunePreview } from '../ports/metadata-repository.js';
import type { Actor, RetentionSetting } from '../types.js';

export const MAX_RETENTION = 1_000_000;
/** Paths a dry run names (those with the most bytes to prune). */
export const PREVIEW_PATHS = 10;

/** A setting changed, with what applying it pruned right away (the versions' sizes, summed). */
export interface RetentionChange extends RetentionSetting {
  pruned: { versions: number; bytes: number };
}

/** What setting maxVersions would prune now; nothing is changed. */
export interface RetentionPreview extends RetentionSetting {
  dryRun: true;
  /** the setting in force (maxVersions is the one asked about) */
  currentMaxVersions: number;
  pruned: PrunePreview;
}

export async function getRetention(ctx: EngineContext, projectId: string): Promise<RetentionSetting> {
  const project = await ctx.requireProject(projectId);
  return { projectId: project.projectId, maxVersions: project.retention.maxVersions };
}

function checkMaxVersions(maxVersions: number): void {
  if (!Number.isSafeInteger(maxVersions) || maxVersions < 0 || maxVersions > MAX_RETENTION) {
    throw new StrataError('INVALID_ARGUMENT', { message: `maxVersions must be an integer from 0 (unlimited) to ${MAX_RETENTION}`, details: { field: 'maxVersions' } });
  }
}

/**
 * Sets maxVersions and prunes the whole project to it right away (oldest first per path; pinned and
 * current versions are kept by the repository), then collects the content that became unreferenced.
 */
export async function setRetention(ctx: EngineContext, input: { projectId: string; maxVersions: number; actor: Actor }): Promise<RetentionChange> {
  const { maxVersions } = input;
  checkMaxVersions(maxVersions);
  await ctx.requireProject(input.projectId);
  // Lowering retention is how a full disk is relieved: its writes may use the store's reserve (gc.ts),
  // made again once the pruned content is collected.
  const project = await withReserve(ctx, () => ctx.repository.projects.update(input.projectId, { retention: { maxVersions } }));
  const pruned = { versions: 0, bytes: 0 };
  if (maxVersions > 0) {
    await ctx.batcher.drain();
    const hold = ctx.retention.holdOf(input.projectId);
    const result = await withReserve(ctx, () =>
      ctx.repository.versions.prune(input.projectId, { keep: maxVersions, ...(hold === undefined ? {} : { holdAfterSeq: hold }) }),
    );
    ctx.retention.release(result.releasedHashes);
    pruned.versions = result.prunedVersions;
    pruned.bytes = result.prunedBytes;
  }
  return { projectId: project.projectId, maxVersions: project.retention.maxVersions, pruned };
}

/**
 * The dry run of setRetention: what it would prune now, by the same rule (the repository's
 * previewPrune shares prune's selection, the sync hold included). Writes already acknowledged are
 * counted: their batch is committed first, as setRetention does.
 */
export async function previewRetention(ctx: EngineContext, input: { projectId: string; maxVersions: number }): Promise<RetentionPreview> {
  const { maxVersions } = input;
  checkMaxVersions(maxVersions);
  const project = await ctx.requireProject(input.projectId);
  await ctx.batcher.drain();
  const hold = ctx.retention.holdOf(input.projectId);
  const pruned = await ctx.repository.versions.previewPrune(input.projectId, { keep: maxVersions, top: PREVIEW_PATHS, ...(hold === undefined ? {} : { holdAfterSeq: hold }) });
  return { projectId: project.projectId, maxVersions, dryRun: true, currentMaxVersions: project.retention.maxVersions, pruned };
}
