import type { EngineContext } from '../context.js';
import { StrataError } from '../errors.js';
import { normalizeProjectPath } from '../paths.js';
import type { Page, VersionRecord } from '../types.js';

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

export function clampLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_PAGE_SIZE;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    throw new StrataError('INVALID_ARGUMENT', { message: `limit must be an integer from 1 to ${MAX_PAGE_SIZE}`, details: { field: 'limit' } });
  }
  return limit;
}

/** Newest first; one path's history or the whole project's. Tombstones included. */
export async function history(
  ctx: EngineContext,
  input: { projectId: string; path?: string; cursor?: string; limit?: number },
): Promise<Page<VersionRecord>> {
  await ctx.requireProject(input.projectId);
  const query: { path?: string; cursor?: string; limit: number } = { limit: clampLimit(input.limit) };
  if (input.path !== undefined && input.path !== '') query.path = normalizeProjectPath(input.path);
  if (input.cursor !== undefined && input.cursor !== '') query.cursor = input.cursor;
  return ctx.repository.versions.history(input.projectId, query);
}

export async function getVersion(ctx: EngineContext, projectId: string, versionId: string): Promise<VersionRecord> {
  await ctx.requireProject(projectId);
  const version = typeof versionId === 'string' ? await ctx.repository.versions.get(projectId, versionId) : null;
  if (!version) throw new StrataError('VERSION_NOT_FOUND', { details: { versionId } });
  return version;
}
