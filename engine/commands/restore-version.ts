import type { EngineContext } from '../context.js';
import type { WriteResult } from '../engine-api.js';
import { StrataError } from '../errors.js';
import type { Actor } from '../types.js';
import { getVersion } from './history.js';
import { assertWritablePath, commitOne } from './write-file.js';

/**
 * The path's content becomes that version's again, as a new `restore` version: nothing in history is
 * rewritten, and restoring a deleted file brings it back. No bytes are copied: the new record points
 * to the stored content.
 */
export async function restoreVersion(ctx: EngineContext, input: { projectId: string; versionId: string; actor: Actor }): Promise<WriteResult> {
  const source = await getVersion(ctx, input.projectId, input.versionId);
  if (source.contentHash === null) {
    throw new StrataError('VERSION_IS_TOMBSTONE', { details: { versionId: source.versionId, path: source.path } });
  }
  const current = await ctx.repository.versions.getEntry(input.projectId, source.path);
  if (!current) await assertWritablePath(ctx, input.projectId, source.path);
  const record = ctx.newVersion({
    projectId: input.projectId,
    path: source.path,
    contentHash: source.contentHash,
    size: source.size,
    actor: input.actor,
    kind: 'restore',
    restoredFrom: source.versionId,
    executable: source.executable,
    symlink: source.symlink,
    dataset: source.dataset,
  });
  // The source record references the content until the new record commits (both live in the
  // repository), so GC cannot take it in between — unless retention prunes the source right now;
  // the shared GC lock closes that window.
  const result = await ctx.gcLock.shared(async () => {
    if (!(await ctx.store.has(source.contentHash!))) {
      throw new StrataError('CONTENT_NOT_FOUND', { details: { versionId: source.versionId, contentHash: source.contentHash } });
    }
    return commitOne(ctx, { record, checkPath: true });
  });
  ctx.retention.schedule(input.projectId, source.path);
  return result;
}
