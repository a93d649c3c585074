// A version's content written to a new file (the working tree's incoming temp file): where the store
// can, a chunking thread copies the stored bytes, checking each object's hash on the way, and fsyncs
// (store.writeObjectsTo); otherwise the verified read stream is piped in. Either way the file's bytes
// are durable when this resolves, so the caller may rename it into place.
import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import type { EngineContext } from '../context.js';
import { loadManifest } from '../datasets/read-dataset.js';
import { StrataError } from '../errors.js';
import { readFile } from './read-file.js';
import { findVersion } from './resolve-ids.js';

export interface WriteVersionFileInput {
  projectId: string;
  versionId: string;
  /** created (it must not exist yet) */
  target: string;
  mode: number;
}

export async function writeVersionFile(ctx: EngineContext, input: WriteVersionFileInput): Promise<{ size: number }> {
  await ctx.requireProject(input.projectId);
  const record = await findVersion(ctx, input.projectId, input.versionId);
  if (!record) throw new StrataError('VERSION_NOT_FOUND', { details: { versionId: input.versionId } });
  if (record.contentHash === null) {
    throw new StrataError('PATH_NOT_FOUND', { message: 'This version is a deletion: it has no content', details: { path: record.path, versionId: record.versionId, deleted: true } });
  }
  if (ctx.store.writeObjectsTo !== undefined) {
    const objects = record.dataset ? (await loadManifest(ctx, record.contentHash)).shards : [{ hash: record.contentHash, size: record.size }];
    if (await ctx.store.writeObjectsTo(objects, input.target, input.mode)) return { size: record.size };
  }
  const { stream } = await readFile(ctx, { projectId: input.projectId, versionId: record.versionId });
  // flush: fsync before close.
  await pipeline(stream, createWriteStream(input.target, { flags: 'wx', mode: input.mode, flush: true }));
  return { size: record.size };
}
