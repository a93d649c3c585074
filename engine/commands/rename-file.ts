import type { EngineContext } from '../context.js';
import type { WriteResult } from '../engine-api.js';
import { StrataError } from '../errors.js';
import { normalizeProjectPath } from '../paths.js';
import type { VersionCommitResult } from '../ports/metadata-repository.js';
import type { Actor, Entry, VersionRecord } from '../types.js';
import { assertWritablePath } from './write-file.js';

/**
 * A rename is a tombstone at `from` and a write of the same content at `to`, committed atomically:
 * both paths' histories show it, and no content byte is copied.
 */
export async function renameFile(
  ctx: EngineContext,
  input: { projectId: string; from: string; to: string; actor: Actor; overwrite?: boolean },
): Promise<{ deleted: VersionRecord; created: WriteResult }> {
  const from = normalizeProjectPath(input.from, 'from');
  const to = normalizeProjectPath(input.to, 'to');
  if (from === to) throw new StrataError('INVALID_ARGUMENT', { message: "'from' and 'to' are the same path", details: { field: 'to' } });
  await ctx.requireProject(input.projectId);
  const source = await ctx.repository.versions.getEntry(input.projectId, from);
  if (!source) throw new StrataError('PATH_NOT_FOUND', { details: { path: from, field: 'from' } });
  const target = await ctx.repository.versions.getEntry(input.projectId, to);
  if (target && !input.overwrite) throw new StrataError('PATH_EXISTS', { details: { path: to, field: 'to' } });
  if (!target) await assertWritablePath(ctx, input.projectId, to, from);

  const { tombstone, created } = renameRecords(ctx, input.projectId, input.actor, from, to, source);
  // The content is referenced by `source` until the tombstone commits, and by `created` after it, in
  // the same transaction; no GC lock is needed.
  const results = await ctx.batcher.submitAtomic([
    { record: tombstone, expectedCurrent: source.versionId },
    { record: created, expectedCurrent: target ? target.versionId : null, checkPath: true },
  ]);
  const failed = results.find((r): r is Extract<VersionCommitResult, { ok: false }> => !r.ok);
  if (failed?.code === 'PATH_CONFLICT') {
    throw new StrataError('PATH_EXISTS', { message: `'${to}' was taken during the rename; nothing was renamed`, details: { path: to, field: 'to' } });
  }
  if (failed) throw new StrataError('STALE_BASE_VERSION', { message: 'The file changed during the rename; nothing was renamed', details: { from, to } });
  ctx.retention.schedule(input.projectId, from);
  ctx.retention.schedule(input.projectId, to);
  const entry = (results[1] as Extract<VersionCommitResult, { ok: true }>).entry!;
  return { deleted: tombstone, created: { entry, version: created } };
}

/**
 * Many renames in one atomic commit: all of them or none (any precondition that fails fails them
 * all, and the caller renames them one by one with renameFile to find which). Watch mode's
 * `mv big big2` of a 2,000-file directory is 2,000 renames; one transaction each (an fsync) took
 * ~26 s, in groups it takes well under one. A path may appear in one pair only.
 */
export async function renameFiles(
  ctx: EngineContext,
  input: { projectId: string; pairs: Array<{ from: string; to: string }>; actor: Actor },
): Promise<Array<{ deleted: VersionRecord; created: WriteResult }>> {
  await ctx.requireProject(input.projectId);
  const seen = new Set<string>();
  const commits: Parameters<typeof ctx.batcher.submitAtomic>[0] = [];
  const records: Array<{ tombstone: VersionRecord; created: VersionRecord }> = [];
  for (const pair of input.pairs) {
    const from = normalizeProjectPath(pair.from, 'from');
    const to = normalizeProjectPath(pair.to, 'to');
    if (from === to || seen.has(from) || seen.has(to)) throw new StrataError('INVALID_ARGUMENT', { message: 'each path may appear in one rename only', details: { field: 'pairs' } });
    seen.add(from);
    seen.add(to);
    const source = await ctx.repository.versions.getEntry(input.projectId, from);
    if (!source) throw new StrataError('PATH_NOT_FOUND', { details: { path: from, field: 'from' } });
    const target = await ctx.repository.versions.getEntry(input.projectId, to);
    if (!target) await assertWritablePath(ctx, input.projectId, to, from);
    const { tombstone, created } = renameRecords(ctx, input.projectId, input.actor, from, to, source);
    commits.push({ record: tombstone, expectedCurrent: source.versionId }, { record: created, expectedCurrent: target ? target.versionId : null, checkPath: true });
    records.push({ tombstone, created });
  }
  if (commits.length === 0) return [];
  const results = await ctx.batcher.submitAtomic(commits);
  if (results.some((r) => !r.ok)) throw new StrataError('STALE_BASE_VERSION', { message: 'A file changed during the renames; nothing was renamed', details: { count: input.pairs.length } });
  return records.map(({ tombstone, created }, i) => {
    ctx.retention.schedule(input.projectId, tombstone.path);
    ctx.retention.schedule(input.projectId, created.path);
    const entry = (results[2 * i + 1] as Extract<VersionCommitResult, { ok: true }>).entry!;
    return { deleted: tombstone, created: { entry, version: created } };
  });
}

/** A rename's two records: the tombstone at `from`, and `source`'s content at `to`. */
function renameRecords(ctx: EngineContext, projectId: string, actor: Actor, from: string, to: string, source: Entry): { tombstone: VersionRecord; created: VersionRecord } {
  const tombstone = ctx.newVersion({ projectId, path: from, contentHash: null, size: 0, actor, kind: 'delete' });
  const created = ctx.newVersion({
    projectId,
    path: to,
    contentHash: source.contentHash,
    size: source.size,
    actor,
    kind: 'write',
    restoredFrom: null,
    executable: source.executable,
    symlink: source.symlink,
    dataset: source.dataset,
  });
  return { tombstone, created };
}
