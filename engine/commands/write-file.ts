import { stat } from 'node:fs/promises';
import type { EngineContext } from '../context.js';
import { isDataset } from '../datasets/rules.js';
import { DEFAULT_CHUNKER_PARAMS } from '../datasets/chunker-params.js';
import { type StoredDataset, storeDatasetFile, storeDatasetFromObject, storeDatasetIngest } from '../datasets/store-dataset.js';
import type { WriteInput, WriteResult } from '../engine-api.js';
import { StrataError } from '../errors.js';
import { normalizeProjectPath } from '../paths.js';
import { hashBuffer } from '../hash.js';
import { isVersioned } from '../policy.js';
import { takeIfSmall } from '../small-content.js';
import { readSymlinkTarget } from '../symlink-target.js';
import type { VersionCommit, WriteConflict } from '../ports/metadata-repository.js';
import type { ContentHash, Entry, Project, VersionRecord } from '../types.js';

export const DEFAULT_MAX_UPLOAD_BYTES = 20 * 1024 ** 3;

export async function writeFile(ctx: EngineContext, input: WriteInput): Promise<WriteResult> {
  const path = normalizeProjectPath(input.path);
  const project = input.project?.projectId === input.projectId ? input.project : await ctx.requireProject(input.projectId);
  // The commit checks the path where commits are serialized (checkPath). Content that may be large is
  // also checked before it is stored, so a doomed upload is refused before its bytes are taken in;
  // small content goes straight on (one query fewer per write; a refused one leaves garbage for gc).
  if (mayBeLarge(input)) await assertWritablePath(ctx, project.projectId, path);

  // Shared GC lock from "bytes in the store" to "record committed": see rw-lock.ts.
  const result = await ctx.gcLock.shared(async (): Promise<WriteResult> => {
    const options = { maxBytes: input.maxBytes ?? DEFAULT_MAX_UPLOAD_BYTES };
    const symlink = input.symlink === true;
    const stored: StoredContent = symlink ? await storeSymlink(ctx, input.content) : await storeContent(ctx, project, path, input, options);
    const executable = input.executable === true && !symlink;
    if (input.ifChanged === true) {
      const current = await unchangedEntry(ctx, project.projectId, path, stored.hash, { executable, symlink, dataset: stored.dataset !== null });
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
      symlink,
      dataset: stored.dataset !== null,
    });
    const commit: VersionCommit = { record, checkPath: true };
    if (stored.dataset !== null) commit.shards = stored.dataset.shards;
    if (stored.withRecord !== undefined) commit.content = stored.withRecord;
    if (input.baseVersionId !== undefined) commit.expectedCurrent = input.baseVersionId;
    return commitOne(ctx, commit);
  });
  if (result.unchanged === true) return result;

  // One rule for every file, datasets included (a dataset is a large file): over the threshold, only
  // allowlisted extensions keep their history. Datasets used to keep every version whatever the
  // allowlist said, while a 55 MiB CSV silently kept one (issue 13). The caller is told.
  const versioned = isVersioned(project.policy, path, result.version.size);
  ctx.retention.schedule(project.projectId, path, versioned ? 0 : 1);
  return { ...result, historyKept: versioned };
}

/** Content is checked early above this size, or when its size is not known. */
const EARLY_CHECK_BYTES = 1024 * 1024;

function mayBeLarge(input: WriteInput): boolean {
  const { content } = input;
  if (content instanceof Uint8Array) return content.length > EARLY_CHECK_BYTES;
  if ('file' in content) return (content.size ?? input.sizeHint ?? Number.POSITIVE_INFINITY) > EARLY_CHECK_BYTES;
  return (input.sizeHint ?? Number.POSITIVE_INFINITY) > EARLY_CHECK_BYTES;
}

interface StoredContent {
  hash: ContentHash;
  size: number;
  dataset: StoredDataset | null;
  /** not stored yet: the commit stores it with the record (VersionCommit.content) */
  withRecord?: Uint8Array;
}

/**
 * Puts the content into the store: as one object, or as a dataset (shards + manifest) when the
 * project's dataset rules say so. A file input whose size is known goes straight to shards; content
 * whose size shows only at its end (a stream) is stored whole first and re-cut if it turns out to be
 * a dataset (the whole object is then garbage for gc).
 */
async function storeContent(
  ctx: EngineContext,
  project: Project,
  path: string,
  input: WriteInput,
  options: { maxBytes: number },
): Promise<StoredContent> {
  const { content } = input;
  const datasets = ctx.store.putDatasetFile !== undefined;
  if (datasets && !(content instanceof Uint8Array) && 'file' in content) {
    // A caller that did not say the size gets it from the file: guessing "not a dataset" would copy
    // and hash the whole file as one object, then chunk that copy (3 hashes and 2 writes of every
    // byte instead of 2 and 1).
    const size = content.size ?? input.sizeHint ?? (await stat(content.file)).size;
    if (isDataset(project.datasets, path, size)) {
      // Never consumed here, even with `adopt`: the caller's file (the mount's staging file, which its
      // crash journal points to) must outlive the commit; the caller removes it afterwards.
      const dataset = await storeDatasetFile(ctx, content.file, { consume: false, maxBytes: options.maxBytes });
      return { hash: dataset.manifestHash, size: dataset.size, dataset };
    }
  }
  // A stream that is a dataset by its path or declared size is cut as it arrives: only its new shards
  // are stored, never a whole copy.
  if (datasets && ctx.store.putDatasetStream !== undefined && !(content instanceof Uint8Array) && !('file' in content) && isDataset(project.datasets, path, input.sizeHint ?? null)) {
    const ingest = await ctx.store.putDatasetStream(content, DEFAULT_CHUNKER_PARAMS, options);
    const dataset = await storeDatasetIngest(ctx, ingest);
    return { hash: dataset.manifestHash, size: dataset.size, dataset };
  }
  // Small content the repository may keep itself rides with the record (one transaction for both).
  const smallMax = Math.min(ctx.store.contentWithRecordMaxBytes ?? -1, options.maxBytes);
  let source = content;
  if (smallMax >= 0 && !(source instanceof Uint8Array) && !('file' in source)) {
    const head = await takeIfSmall(source, smallMax);
    source = 'small' in head ? head.small : head.stream;
  }
  if (source instanceof Uint8Array && source.length <= smallMax && !(datasets && isDataset(project.datasets, path, source.length))) {
    input.onProgress?.(source.length);
    return { hash: hashBuffer(source), size: source.length, dataset: null, withRecord: source };
  }
  const progress = input.onProgress ? { onProgress: input.onProgress } : {};
  const stored =
    source instanceof Uint8Array
      ? await ctx.store.putBuffer(source, options)
      : 'file' in source
        ? source.adopt === true && ctx.store.adoptFile !== undefined
          ? await ctx.store.adoptFile(source.file, { ...options, ...(source.knownHash === undefined ? {} : { knownHash: source.knownHash }) })
          : await ctx.store.putFile(source.file, { ...options, ...progress, ...(source.handle === undefined ? {} : { handle: source.handle }) })
        : await ctx.store.put(source, { ...options, ...progress });
  if (datasets && isDataset(project.datasets, path, stored.size)) {
    const dataset = await storeDatasetFromObject(ctx, stored.hash, stored.size);
    return { hash: dataset.manifestHash, size: dataset.size, dataset };
  }
  return { hash: stored.hash, size: stored.size, dataset: null };
}

/**
 * A link's target, checked and stored whole as one object: a few bytes, never a dataset whatever the
 * project's dataset rules say about its path (a link to a 2 GB file is still a link).
 */
async function storeSymlink(ctx: EngineContext, content: WriteInput['content']): Promise<{ hash: ContentHash; size: number; dataset: null }> {
  const target = await readSymlinkTarget(content);
  const stored = await ctx.store.putBuffer(target);
  return { hash: stored.hash, size: stored.size, dataset: null };
}

/** The current entry and version when they already hold this content and these flags; else null. */
async function unchangedEntry(
  ctx: EngineContext,
  projectId: string,
  path: string,
  hash: Entry['contentHash'],
  flags: Pick<Entry, 'executable' | 'symlink' | 'dataset'>,
): Promise<WriteResult | null> {
  const entry = await ctx.repository.versions.getEntry(projectId, path);
  if (!entry || entry.contentHash !== hash || entry.executable !== flags.executable || entry.symlink !== flags.symlink || entry.dataset !== flags.dataset) return null;
  const version = await ctx.repository.versions.get(projectId, entry.versionId);
  return version ? { entry, version, unchanged: true } : null;
}

/** Commits one record; STALE_BASE_VERSION if its precondition failed, PATH_IS_DIRECTORY / PATH_EXISTS if its path is taken. */
export async function commitOne(ctx: EngineContext, commit: VersionCommit): Promise<{ version: VersionRecord; entry: Entry }> {
  const result = await ctx.batcher.submit(commit);
  if (!result.ok && result.code === 'PATH_CONFLICT') throw conflictError(commit.record.path, result.conflict);
  if (!result.ok) {
    throw new StrataError('STALE_BASE_VERSION', {
      details: { path: commit.record.path, expectedVersionId: commit.expectedCurrent ?? null, currentVersionId: result.currentVersionId },
    });
  }
  return { version: commit.record, entry: result.entry! };
}

/**
 * A file cannot be written where a directory is, nor below an existing file. Asked before the
 * content is stored, to refuse early; the commit checks again where commits are serialized
 * (VersionCommit.checkPath), since two writes at once could both pass this.
 */
/**
 * `leaving`: a file the same atomic commit deletes first (a rename's source), which is no conflict: `mv
 * b c/a; mkdir b; mv c/a b/a` is one rename from `b` to `b/a`, refused for good as "'b' is a file"
 * (the mount retried it forever). The commit checks the tree again after its tombstone (checkPath).
 */
export async function assertWritablePath(ctx: EngineContext, projectId: string, path: string, leaving?: string): Promise<void> {
  const conflict = await ctx.repository.versions.writeConflict(projectId, path);
  if (conflict === null || (conflict.kind === 'file-ancestor' && conflict.ancestor === leaving)) return;
  throw conflictError(path, conflict);
}

function conflictError(path: string, conflict: WriteConflict): StrataError {
  if (conflict.kind === 'directory') return new StrataError('PATH_IS_DIRECTORY', { message: `'${path}' is a directory`, details: { path } });
  return new StrataError('PATH_EXISTS', {
    message: `'${conflict.ancestor}' is a file, so '${path}' cannot be created below it`,
    details: { path, conflictingPath: conflict.ancestor },
  });
}
