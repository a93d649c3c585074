import type { Readable } from 'node:stream';
import type { EngineContext } from '../context.js';
import type { ChunkWriter } from '../datasets/pump-dataset.js';
import { readDataset } from '../datasets/read-dataset.js';
import { StrataError } from '../errors.js';
import { normalizeProjectPath } from '../paths.js';
import { findVersion } from './resolve-ids.js';
import type { ReadRange } from '../ports/content-store.js';
import type { ContentHash, Entry, VersionRecord } from '../types.js';

export interface ReadFileInput {
  projectId: string;
  path?: string;
  versionId?: string;
  range?: ReadRange;
}

export interface ReadFileResult {
  stream: Readable;
  size: number;
  version: VersionRecord | Entry;
  /**
   * A dataset on a store with local shard files: writes the bytes to `sink` through a few reused
   * buffers instead (the stream is then left unread). For a consumer that releases each chunk by
   * calling back, such as a socket.
   */
  writeTo?: ChunkWriter;
}

/** The current content of a path, or the content of one version (which must belong to the project). */
export async function readFile(ctx: EngineContext, input: ReadFileInput): Promise<ReadFileResult> {
  await ctx.requireProject(input.projectId);
  const path = input.path === undefined ? undefined : normalizeProjectPath(input.path);
  let hash: ContentHash;
  let size: number;
  let version: VersionRecord | Entry;
  if (input.versionId !== undefined) {
    const record = await findVersion(ctx, input.projectId, input.versionId);
    if (!record || (path !== undefined && record.path !== path)) {
      throw new StrataError('VERSION_NOT_FOUND', { details: { versionId: input.versionId } });
    }
    if (record.contentHash === null) {
      throw new StrataError('PATH_NOT_FOUND', { message: 'This version is a deletion: it has no content', details: { path: record.path, versionId: record.versionId, deleted: true } });
    }
    hash = record.contentHash;
    size = record.size;
    version = record;
  } else {
    if (path === undefined) throw new StrataError('INVALID_ARGUMENT', { message: 'path or versionId is required', details: { field: 'path' } });
    const entry = await ctx.repository.versions.getEntry(input.projectId, path);
    if (!entry) throw new StrataError('PATH_NOT_FOUND', { details: { path } });
    hash = entry.contentHash;
    size = entry.size;
    version = entry;
  }
  if (input.range) {
    const { start, end } = input.range;
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start || start >= size) {
      throw new StrataError('INVALID_ARGUMENT', { message: 'The range is not satisfiable', details: { field: 'range', size } });
    }
    const clamped = { start, end: Math.min(end, size - 1) };
    const bytes = clamped.end - clamped.start + 1;
    return version.dataset ? { ...(await readDataset(ctx, hash, clamped)), size: bytes, version } : { stream: await ctx.store.open(hash, clamped), size: bytes, version };
  }
  return version.dataset ? { ...(await readDataset(ctx, hash)), size, version } : { stream: await ctx.store.open(hash), size, version };
}
