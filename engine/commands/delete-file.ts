import type { EngineContext } from '../context.js';
import { isStrataError, StrataError } from '../errors.js';
import { normalizeProjectPath } from '../paths.js';
import type { Actor, VersionRecord } from '../types.js';
import { commitOne } from './write-file.js';

/** A delete is a tombstone version: the path leaves the tree, its history stays findable. */
export async function deleteFile(
  ctx: EngineContext,
  input: { projectId: string; path: string; actor: Actor; baseVersionId?: string | null },
): Promise<{ version: VersionRecord }> {
  const path = normalizeProjectPath(input.path);
  await ctx.requireProject(input.projectId);
  // Without a caller-given base, a concurrent write between our read and our commit is retried
  // rather than clobbered blindly: the tombstone always names the version it deletes.
  for (let attempt = 0; ; attempt++) {
    const entry = await ctx.repository.versions.getEntry(input.projectId, path);
    if (!entry) {
      if (await ctx.repository.versions.isDirectory(input.projectId, path)) throw new StrataError('PATH_IS_DIRECTORY', { details: { path } });
      throw new StrataError('PATH_NOT_FOUND', { details: { path } });
    }
    const record = ctx.newVersion({ projectId: input.projectId, path, contentHash: null, size: 0, actor: input.actor, kind: 'delete' });
    const expected = input.baseVersionId !== undefined ? input.baseVersionId : entry.versionId;
    try {
      const { version } = await commitOne(ctx, { record, expectedCurrent: expected });
      ctx.retention.schedule(input.projectId, path);
      return { version };
    } catch (error) {
      if (!isStrataError(error, 'STALE_BASE_VERSION') || input.baseVersionId !== undefined || attempt >= 3) throw error;
    }
  }
}
