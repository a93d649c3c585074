import type { EngineContext } from '../context.js';
import type { WriteInput, WriteResult } from '../engine-api.js';
import { StrataError } from '../errors.js';
import { normalizeProjectPath } from '../paths.js';
import { isVersioned } from '../policy.js';
import type { VersionCommit } from '../ports/metadata-repository.js';
import type { Entry, VersionRecord } from '../types.js';

export const DEFAULT_MAX_UPLOAD_BYTES = 20 * 1024 ** 3;

export async function writeFile(ctx: EngineContext, input: WriteInput): Promise<WriteResult> {
  const path = normalizeProjectPath(input.path);
  const project = await ctx.requireProject(input.projectId);
  await assertWritablePath(ctx, project.projectId, path);

  // Shared GC lock from "bytes in the store" to "record committed": see rw-lock.ts.
  const result = await ctx.gcLock.shared(async (): Promise<WriteResult> => {
    const options = { maxBytes: input.maxBytes ?? DEFAULT_MAX_UPLOAD_BYTES };
    const progress = input.onProgress ? { onProgress: input.onProgress } : {};
    const { content } = input;
    const stored =
      content instanceof Uint8Array
        ? await ctx.store.putBuffer(content, options)
        : 'file' in content
          ? content.adopt === true && ctx.store.adoptFile !== undefined
            ? await ctx.store.adoptFile(content.file, { ...options, ...(content.knownHash === undefined ? {} : { knownHash: content.knownHash }) })
            : await ctx.store.putFile(content.file, { ...options, ...progress })
          : await ctx.store.put(content, { ...options, ...progress });
    const executable = input.executable === true;
    if (input.ifChanged === true) {
      const current = await unchangedEntry(ctx, project.projectId, path, stored.hash, executable);
      if (current) return current;
    }
    const record = ctx.newVersion({
      projectId: project.projectId,
      path,
      contentHash: stored.hash,
      size: stored.size,
      actor: input.actor,
      kind: input.kind ?? 'write',
      executable,
    });
    const commit: VersionCommit = { record };
    if (input.baseVersionId !== undefined) commit.expectedCurrent = input.baseVersionId;
    return commitOne(ctx, commit);
  });
  if (result.unchanged === true) return result;

  const versioned = isVersioned(project.policy, path, result.version.size);
  ctx.retention.schedule(project.projectId, path, versioned ? 0 : 1);
  return result;
}

/** The current entry and version when they already hold this content and exec bit; else null. */
async function unchangedEntry(
  ctx: EngineContext,
  projectId: string,
  path: string,
  hash: Entry['contentHash'],
  executable: boolean,
): Promise<WriteResult | null> {
  const entry = await ctx.repository.versions.getEntry(projectId, path);
  if (!entry || entry.contentHash !== hash || entry.executable !== executable) return null;
  const version = await ctx.repository.versions.get(projectId, entry.versionId);
  return version ? { entry, version, unchanged: true } : null;
}

/** Commits one record; STALE_BASE_VERSION if its precondition failed. */
export async function commitOne(ctx: EngineContext, commit: VersionCommit): Promise<{ version: VersionRecord; entry: Entry }> {
  const result = await ctx.batcher.submit(commit);
  if (!result.ok) {
    throw new StrataError('STALE_BASE_VERSION', {
      details: { path: commit.record.path, expectedVersionId: commit.expectedCurrent ?? null, currentVersionId: result.currentVersionId },
    });
  }
  return { version: commit.record, entry: result.entry! };
}

/** A file cannot be written where a directory is, nor below an existing file. */
export async function assertWritablePath(ctx: EngineContext, projectId: string, path: string): Promise<void> {
  if (await ctx.repository.versions.isDirectory(projectId, path)) {
    throw new StrataError('PATH_IS_DIRECTORY', { details: { path } });
  }
  const segments = path.split('/');
  for (let i = 1; i < segments.length; i++) {
    const ancestor = segments.slice(0, i).join('/');
    if (await ctx.repository.versions.getEntry(projectId, ancestor)) {
      throw new StrataError('PATH_EXISTS', { message: `'${ancestor}' is a file, so '${path}' cannot be created below it`, details: { path, conflictingPath: ancestor } });
    }
  }
}
