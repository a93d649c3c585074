import type { EngineContext } from '../context.js';
import { StrataError } from '../errors.js';
import type { Actor, RetentionSetting } from '../types.js';

export const MAX_RETENTION = 1_000_000;

export async function getRetention(ctx: EngineContext, projectId: string): Promise<RetentionSetting> {
  const project = await ctx.requireProject(projectId);
  return { projectId: project.projectId, maxVersions: project.retention.maxVersions };
}

/**
 * Sets maxVersions and prunes the whole project to it right away (oldest first per path; pinned and
 * current versions are kept by the repository), then collects the content that became unreferenced.
 */
export async function setRetention(ctx: EngineContext, input: { projectId: string; maxVersions: number; actor: Actor }): Promise<RetentionSetting> {
  const { maxVersions } = input;
  if (!Number.isSafeInteger(maxVersions) || maxVersions < 0 || maxVersions > MAX_RETENTION) {
    throw new StrataError('INVALID_ARGUMENT', { message: `maxVersions must be an integer from 0 (unlimited) to ${MAX_RETENTION}`, details: { field: 'maxVersions' } });
  }
  await ctx.requireProject(input.projectId);
  const project = await ctx.repository.projects.update(input.projectId, { retention: { maxVersions } });
  if (maxVersions > 0) {
    await ctx.batcher.drain();
    const hold = ctx.retention.holdOf(input.projectId);
    const result = await ctx.repository.versions.prune(input.projectId, { keep: maxVersions, ...(hold === undefined ? {} : { holdAfterSeq: hold }) });
    ctx.retention.release(result.releasedHashes);
  }
  return { projectId: project.projectId, maxVersions: project.retention.maxVersions };
}
