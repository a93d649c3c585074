import type { EngineContext } from '../context.js';
import { StrataError } from '../errors.js';
import { normalizeProjectPath } from '../paths.js';
import type { Page, VersionRecord } from '../types.js';
import { findVersion } from './resolve-ids.js';

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
  // a whole id, or a unique prefix or ending of one (resolve-ids.ts)
  const version = await findVersion(ctx, projectId, versionId);
  if (!version) throw new StrataError('VERSION_NOT_FOUND', { details: { versionId } });
  return version;
}

/** A version, and the rename it was made by (`history --follow`): the old path, its tombstone and its last version. */
export interface RenameInfo {
  version: VersionRecord;
  renamedFrom: { path: string; tombstone: VersionRecord; source: VersionRecord } | null;
}

export async function renameOf(ctx: EngineContext, projectId: string, versionId: string): Promise<RenameInfo> {
  const version = await getVersion(ctx, projectId, versionId);
  const found = await ctx.repository.versions.renameSource(projectId, version.versionId);
  return { version, renamedFrom: found === null ? null : { path: found.tombstone.path, ...found } };
}
