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
  // `created` is the project's view: whether the shared store already held the bytes (for another
  // project or organization) must not be answered, or an upload would tell whether anyone stores them.
  const had = (await ctx.repository.versions.unavailableObjects(input.projectId, [expectedHash])).length === 0;
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
  return { contentHash: result.hash, size: result.size, created: !had };
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

/** Small contents per batch read (sync's batch download), and their total bytes: as for batch uploads. */
export const MAX_READ_BATCH_OBJECTS = MAX_BATCH_OBJECTS;
export const MAX_READ_BATCH_BYTES = MAX_BATCH_BYTES;

/**
 * Many contents the project has, by hash, for one streamed answer (a pulling workstation's batch
 * download: one request per few MiB of small files instead of one per file). Each hash is checked
 * exactly as openObject checks one: a hash the project neither references nor was sent is
 * CONTENT_NOT_FOUND (naming it and its index), whatever the shared store holds, and nothing is sent.
 * Only sizes are looked up here; the caller opens each object as it streams it (never all at once).
 */
export async function objectsToRead(ctx: EngineContext, input: { projectId: string; hashes: string[] }): Promise<Array<{ hash: ContentHash; size: number }>> {
  await ctx.requireProject(input.projectId);
  if (input.hashes.length > MAX_READ_BATCH_OBJECTS) {
    throw new StrataError('TOO_MANY_HASHES', { details: { max: MAX_READ_BATCH_OBJECTS, given: input.hashes.length } });
  }
  const hashes = input.hashes.map((hash, i) => parseContentHash(hash, `hashes[${i}]`));
  const unavailable = new Set(await ctx.repository.versions.unavailableObjects(input.projectId, [...new Set(hashes)]));
  const found: Array<{ hash: ContentHash; size: number }> = [];
  let bytes = 0;
  for (const [index, hash] of hashes.entries()) {
    const info = unavailable.has(hash) ? null : await ctx.store.stat(hash);
    if (info === null) throw new StrataError('CONTENT_NOT_FOUND', { details: { hash, index } });
    bytes += info.size;
    if (bytes > MAX_READ_BATCH_BYTES) throw new StrataError('BATCH_TOO_LARGE', { details: { maxBytes: MAX_READ_BATCH_BYTES, index } });
    found.push({ hash, size: info.size });
  }
  return found;
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
  // Shards new to the project, not to the shared store (see putObject's `created`).
  const lacking = new Set(await ctx.repository.versions.unavailableObjects(input.projectId, [...new Set(manifest.shards.map((shard) => shard.hash))]));
  const stream = streamUntilError(input.content);
  const ingest = await ctx.store.putDatasetStream(stream.source, manifest.chunker, {
    maxBytes: Math.min(manifest.size, input.maxBytes ?? Number.POSITIVE_INFINITY),
    expect: { hash: manifest.hash, shards: manifest.shards },
  });
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
  return { size: ingest.size, shards: arrived.length, newShards: arrived.filter((hash) => lacking.has(hash)).length };
}

/** One object rebuilt on the server from content the project has and bytes sent with the request. */
export interface ComposedObject {
  hash: string;
  parts: Array<{ from: string; offset: number; length: number } | { literal: number }>;
}

export const MAX_COMPOSED_OBJECTS = 100;
export const MAX_COMPOSED_OBJECT_BYTES = 16 * 1024 * 1024;
const MAX_PARTS = 10_000;

/**
 * Objects made of copies of content the project already has plus the bytes that are new (sync's
 * delta upload: an edited shard of a big dataset, its manifest): each is assembled, then verified
 * against its hash like any upload. A copy of content the project does not have is
 * CONTENT_NOT_AVAILABLE; a mismatch is CONTENT_HASH_MISMATCH; either way nothing counts as sent.
 */
export async function composeObjects(
  ctx: EngineContext,
  input: { projectId: string; objects: ComposedObject[]; literal: Uint8Array },
): Promise<{ stored: number; bytes: number; literalBytes: number }> {
  await ctx.requireProject(input.projectId);
  const bad = (field: string, why: string) => new StrataError('INVALID_ARGUMENT', { message: `${field} ${why}`, details: { field } });
  if (!Array.isArray(input.objects) || input.objects.length > MAX_COMPOSED_OBJECTS) throw bad('objects', `must be an array of at most ${MAX_COMPOSED_OBJECTS}`);
  const sources = new Set<ContentHash>();
  let literalAt = 0;
  const plans = input.objects.map((object, i) => {
    const hash = parseContentHash(object?.hash, `objects[${i}].hash`);
    if (!Array.isArray(object.parts) || object.parts.length > MAX_PARTS) throw bad(`objects[${i}].parts`, `must be an array of at most ${MAX_PARTS}`);
    let size = 0;
    const steps = object.parts.map((part, k) => {
      const field = `objects[${i}].parts[${k}]`;
      if (part !== null && typeof part === 'object' && 'literal' in part) {
        if (!Number.isSafeInteger(part.literal) || part.literal <= 0) throw bad(`${field}.literal`, 'must be a positive integer');
        size += part.literal;
        literalAt += part.literal;
        return { kind: 'literal', start: literalAt - part.literal, end: literalAt } as const;
      }
      const from = parseContentHash((part as { from?: unknown })?.from as string, `${field}.from`);
      const { offset, length } = part as { offset: number; length: number };
      if (!Number.isSafeInteger(offset) || offset < 0) throw bad(`${field}.offset`, 'must be a non-negative integer');
      if (!Number.isSafeInteger(length) || length <= 0) throw bad(`${field}.length`, 'must be a positive integer');
      sources.add(from);
      size += length;
      return { kind: 'copy', from, offset, length } as const;
    });
    if (size > MAX_COMPOSED_OBJECT_BYTES) throw bad(`objects[${i}]`, `must assemble to at most ${MAX_COMPOSED_OBJECT_BYTES} bytes`);
    return { hash, size, steps };
  });
  if (literalAt !== input.literal.length) throw bad('body', `carries ${input.literal.length} literal bytes where the parts name ${literalAt}`);
  const unavailable = await ctx.repository.versions.unavailableObjects(input.projectId, [...sources]);
  if (unavailable.length > 0) throw new StrataError('CONTENT_NOT_AVAILABLE', { details: { hashes: unavailable.slice(0, 10), count: unavailable.length } });
  const assembled: Buffer[] = [];
  for (const [i, plan] of plans.entries()) {
    const bytes = Buffer.allocUnsafe(plan.size);
    let at = 0;
    for (const step of plan.steps) {
      if (step.kind === 'literal') {
        bytes.set(input.literal.subarray(step.start, step.end), at);
        at += step.end - step.start;
        continue;
      }
      const { from, offset, length } = step;
      const info = await ctx.store.stat(from);
      if (info === null || offset + length > info.size) throw bad(`objects[${i}].parts`, `copy past the end of ${from}`);
      for await (const piece of await ctx.store.open(from, { start: offset, end: offset + length - 1 })) {
        bytes.set(piece as Uint8Array, at);
        at += (piece as Uint8Array).length;
      }
    }
    assembled.push(bytes);
  }
  const results = await ctx.store.putBuffers(assembled);
  const wrong = results.findIndex((result, i) => result.hash !== plans[i]!.hash);
  if (wrong !== -1) throw new StrataError('CONTENT_HASH_MISMATCH', { details: { expected: plans[wrong]!.hash, actual: results[wrong]!.hash, index: wrong } });
  const at = ctx.now();
  await ctx.repository.versions.recordUploads(
    input.projectId,
    results.map((result) => ({ contentHash: result.hash, size: result.size, at })),
  );
  return { stored: results.length, bytes: results.reduce((sum, result) => sum + result.size, 0), literalBytes: input.literal.length };
}
