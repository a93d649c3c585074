// Content by hash for sync (issue 14): a workstation asks which of its contents the project lacks
// and uploads only those, each verified against its BLAKE3 before the store keeps it. What a project
// "has" is what it references or was uploaded to it, never what the shared store happens to hold
// (sqlite-sync-objects.ts says why).
import type { Readable } from 'node:stream';
import type { EngineContext } from '../context.js';
import { type DatasetManifest, parseManifest } from '../datasets/manifest.js';
import { streamUntilError } from '../datasets/stream-until-error.js';
import { isStrataError, StrataError } from '../errors.js';
import { parseContentHash } from '../hash.js';
import type { ContentHash } from '../types.js';

/** Hashes per question: a project of 100,000 files asks in 100 requests. */
export const MAX_HASHES_PER_QUERY = 1_000;

export async function missingObjects(ctx: EngineContext, input: { projectId: string; hashes: string[] }): Promise<ContentHash[]> {
  await ctx.requireProject(input.projectId);
  if (input.hashes.length > MAX_HASHES_PER_QUERY) {
    throw new StrataError('TOO_MANY_HASHES', { details: { max: MAX_HASHES_PER_QUERY, given: input.hashes.length } });
  }
  const hashes = [...new Set(input.hashes.map((hash, i) => parseContentHash(hash, `hashes[${i}]`)))];
  return ctx.repository.versions.unavailableObjects(input.projectId, hashes);
}

export async function putObject(
  ctx: EngineContext,
  input: { projectId: string; hash: string; content: AsyncIterable<Uint8Array>; maxBytes?: number },
): Promise<{ contentHash: ContentHash; size: number; created: boolean }> {
  await ctx.requireProject(input.projectId);
  const expectedHash = parseContentHash(input.hash, 'hash');
  let result: Awaited<ReturnType<typeof ctx.store.put>>;
  try {
    // The store hashes as it writes and keeps nothing when the bytes hash to something else.
    result = await ctx.store.put(input.content, { expectedHash, ...(input.maxBytes === undefined ? {} : { maxBytes: input.maxBytes }) });
  } catch (error) {
    if (isStrataError(error, 'CONTENT_CORRUPT')) {
      throw new StrataError('CONTENT_HASH_MISMATCH', { details: { expected: expectedHash, actual: error.details?.['actual'] } });
    }
    throw error;
  }
  await ctx.repository.versions.recordUpload(input.projectId, { contentHash: result.hash, size: result.size, at: ctx.now() });
  return { contentHash: result.hash, size: result.size, created: result.created };
}

/** Small objects per batch upload, and their total bytes (one request, one durable write for all). */
export const MAX_BATCH_OBJECTS = 1_000;
export const MAX_BATCH_BYTES = 64 * 1024 * 1024;

/**
 * Many small contents at once (sync's batch upload): each is checked against its hash and only then
 * counted as the project's; one mismatch fails the request (CONTENT_HASH_MISMATCH), and the bytes
 * stored for it are no one's (gc removes them).
 */
export async function putObjects(
  ctx: EngineContext,
  input: { projectId: string; objects: Array<{ hash: string; data: Uint8Array }> },
): Promise<{ stored: number; bytes: number }> {
  await ctx.requireProject(input.projectId);
  if (input.objects.length > MAX_BATCH_OBJECTS) {
    throw new StrataError('TOO_MANY_HASHES', { details: { max: MAX_BATCH_OBJECTS, given: input.objects.length } });
  }
  const expected = input.objects.map((object, i) => parseContentHash(object.hash, `objects[${i}]`));
  const results = await ctx.store.putBuffers(input.objects.map((object) => object.data));
  const wrong = results.findIndex((result, i) => result.hash !== expected[i]);
  if (wrong !== -1) {
    throw new StrataError('CONTENT_HASH_MISMATCH', { details: { expected: expected[wrong], actual: results[wrong]!.hash, index: wrong } });
  }
  const at = ctx.now();
  await ctx.repository.versions.recordUploads(
    input.projectId,
    results.map((result) => ({ contentHash: result.hash, size: result.size, at })),
  );
  return { stored: results.length, bytes: results.reduce((sum, result) => sum + result.size, 0) };
}

/**
 * One content the project has, by hash (a workstation pulling a dataset fetches its manifest and
 * only the shards it lacks). A hash the project neither references nor was sent is CONTENT_NOT_FOUND,
 * whatever the shared store holds. The store verifies the bytes against the hash as they stream.
 */
export async function openObject(ctx: EngineContext, input: { projectId: string; hash: string }): Promise<{ stream: Readable; size: number }> {
  await ctx.requireProject(input.projectId);
  const hash = parseContentHash(input.hash, 'hash');
  const info = (await ctx.repository.versions.unavailableObjects(input.projectId, [hash])).length === 0 ? await ctx.store.stat(hash) : null;
  if (info === null) throw new StrataError('CONTENT_NOT_FOUND', { details: { hash } });
  return { stream: await ctx.store.open(hash), size: info.size };
}

/**
 * A dataset sent whole (a first push): the assembled bytes are cut with the manifest's own chunker
 * parameters as they arrive, which makes the manifest's shards in one pack file (one fsync, not one
 * per shard). The manifest must have been sent first. Every shard of the manifest that arrived whole
 * counts as sent, even when the stream was cut or its bytes turn out not to be the manifest's: the
 * next push asks again and sends only what is still missing (the resume of a large upload).
 */
export async function putDatasetContent(
  ctx: EngineContext,
  input: { projectId: string; manifestHash: string; content: AsyncIterable<Uint8Array>; maxBytes?: number },
): Promise<{ size: number; shards: number; newShards: number }> {
  await ctx.requireProject(input.projectId);
  const manifestHash = parseContentHash(input.manifestHash, 'manifestHash');
  if ((await ctx.repository.versions.unavailableObjects(input.projectId, [manifestHash])).length > 0) {
    throw new StrataError('CONTENT_NOT_AVAILABLE', { message: 'Send the dataset manifest before its bytes', details: { hashes: [manifestHash], count: 1 } });
  }
  let manifest: DatasetManifest;
  try {
    manifest = parseManifest(await ctx.store.readBuffer(manifestHash), manifestHash);
  } catch (error) {
    if (!isStrataError(error, 'DATASET_MANIFEST_INVALID')) throw error;
    throw new StrataError('INVALID_ARGUMENT', { message: `manifestHash does not name a dataset manifest: ${error.message}`, details: { field: 'manifestHash' } });
  }
  if (ctx.store.putDatasetStream === undefined) throw new StrataError('INTERNAL', { message: 'This content store cannot store datasets' });
  const stream = streamUntilError(input.content);
  const ingest = await ctx.store.putDatasetStream(stream.source, manifest.chunker, { maxBytes: Math.min(manifest.size, input.maxBytes ?? Number.POSITIVE_INFINITY) });
  const listed = new Map(manifest.shards.map((shard) => [shard.hash, shard.size]));
  const at = ctx.now();
  const arrived = [...new Set(ingest.shards.map((shard) => shard.hash))].filter((hash) => listed.has(hash));
  await ctx.repository.versions.recordUploads(
    input.projectId,
    arrived.map((hash) => ({ contentHash: hash, size: listed.get(hash)!, at })),
  );
  if (stream.failure() !== undefined) throw stream.failure();
  if (ingest.hash !== manifest.hash) {
    throw new StrataError('CONTENT_HASH_MISMATCH', { message: 'The bytes sent are not the dataset the manifest describes', details: { expected: manifest.hash, actual: ingest.hash } });
  }
  return { size: ingest.size, shards: arrived.length, newShards: ingest.newShards };
}
