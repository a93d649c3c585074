// Reading from the S3 store: verified whole-object streams, unverified ranges, stat from HEADs of the
// object and its marker, and the listing.
import type { Readable } from 'node:stream';
import { Transform, type TransformCallback } from 'node:stream';
import { GetObjectCommand, type GetObjectCommandOutput, HeadObjectCommand, type HeadObjectCommandOutput, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { StrataError } from '../errors.js';
import { hashBuffer } from '../hash.js';
import type { ObjectInfo, ReadRange } from '../ports/content-store.js';
import type { ContentHash } from '../types.js';
import { corruptError, resolveRange, VerifyingTransform } from './local-content-store-read.js';
import { hashOfKey, markerKey, objectKey, type S3Context, s3Call, s3CallOrMissing, s3Failure } from './s3-content-store-config.js';
import { StreamHasher } from './s3-content-store-digest.js';
import { TOUCHED_META } from './s3-content-store-multipart.js';

export function notFound(hash: ContentHash): StrataError {
  return new StrataError('CONTENT_NOT_FOUND', { details: { hash } });
}

async function getObject(ctx: S3Context, hash: ContentHash, range?: string): Promise<GetObjectCommandOutput | null> {
  return s3CallOrMissing(ctx, 'GetObject', () => ctx.client.send(new GetObjectCommand({ Bucket: ctx.bucket, Key: objectKey(ctx, hash), Range: range })));
}

function head(ctx: S3Context, key: string): Promise<HeadObjectCommandOutput | null> {
  return s3CallOrMissing(ctx, 'HeadObject', () => ctx.client.send(new HeadObjectCommand({ Bucket: ctx.bucket, Key: key })));
}

/** When an object or marker was written: our metadata (ms), else Last-Modified (S3 gives seconds). */
function touchedAt(out: HeadObjectCommandOutput): number {
  const ms = Number(out.Metadata?.[TOUCHED_META]);
  return Number.isSafeInteger(ms) && ms > 0 ? ms : (out.LastModified?.getTime() ?? 0);
}

export async function statObject(ctx: S3Context, hash: ContentHash): Promise<ObjectInfo | null> {
  const [object, marker] = await Promise.all([head(ctx, objectKey(ctx, hash)), head(ctx, markerKey(ctx, hash))]);
  if (object === null) return null;
  return { hash, size: object.ContentLength ?? 0, touchedAtMs: Math.max(touchedAt(object), marker === null ? 0 : touchedAt(marker)) };
}

/**
 * Whether the object is stored. A caller may act on a yes (skip storing a shard, commit a record that
 * points at it), so with a guard the hash is touched first: a replica's collector then spares it.
 */
export async function hasObject(ctx: S3Context, hash: ContentHash): Promise<boolean> {
  await ctx.guard?.touch([hash]);
  return (await head(ctx, objectKey(ctx, hash))) !== null;
}

// Whole-object reads are verified as they stream (VerifyingTransform, shared with the local store's
// loose objects): on the event loop, S3's ~16-64 KiB pieces cost ~10-30 µs of BLAKE3 each, paced by
// the network and the consumer.

/**
 * Passes bytes [skip, skip + length) of what the server sent. S3 sends exactly the range; s3rver
 * 3.7.1 reads `bytes=0-0` as `bytes=0-` (its `end || Infinity`), and a server may ignore Range.
 */
class WindowTransform extends Transform {
  constructor(
    private skip: number,
    private left: number,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    let piece = chunk;
    if (this.skip > 0) {
      const dropped = Math.min(this.skip, piece.length);
      piece = piece.subarray(dropped);
      this.skip -= dropped;
    }
    if (this.left > 0 && piece.length > 0) {
      const taken = piece.subarray(0, this.left);
      this.left -= taken.length;
      callback(null, taken);
      return;
    }
    callback();
  }

  override _flush(callback: TransformCallback): void {
    callback(this.left === 0 ? null : new StrataError('STORAGE_ERROR', { message: 'S3 ended a ranged read early' }));
  }
}

/** Errors of the body (a reset connection) reach the consumer as STORAGE_ERROR; closing the consumer closes the body. */
function through(ctx: S3Context, body: Readable, transform: Transform): Readable {
  body.on('error', (error) => transform.destroy(s3Failure(ctx, 'GetObject (body)', error)));
  transform.on('close', () => body.destroy());
  return body.pipe(transform);
}

export async function openObject(ctx: S3Context, hash: ContentHash, range?: ReadRange): Promise<Readable> {
  if (range === undefined) {
    const out = await getObject(ctx, hash);
    if (out === null) throw notFound(hash);
    return through(ctx, out.Body as Readable, new VerifyingTransform(hash));
  }
  const { start, end } = range;
  if (!(Number.isSafeInteger(start) && Number.isSafeInteger(end) && start >= 0 && end >= start)) {
    throw new StrataError('INVALID_ARGUMENT', { message: `The range ${start}-${end} is not a byte range`, details: { field: 'range', start, end } });
  }
  let out: GetObjectCommandOutput | null;
  try {
    out = await getObject(ctx, hash, `bytes=${start}-${end}`);
  } catch (error) {
    if (!(error instanceof StrataError) || error.details?.['status'] !== 416) throw error;
    // Not satisfiable: the object's size makes the same INVALID_ARGUMENT as the local store.
    const info = await head(ctx, objectKey(ctx, hash));
    if (info === null) throw notFound(hash);
    resolveRange(range, info.ContentLength ?? 0);
    throw error;
  }
  if (out === null) throw notFound(hash);
  const body = out.Body as Readable;
  const served = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(out.ContentRange ?? '');
  const size = served === null ? (out.ContentLength ?? 0) : Number(served[3]);
  let bounds: { start: number; end: number };
  try {
    bounds = resolveRange(range, size);
  } catch (error) {
    body.destroy();
    throw error;
  }
  const servedFrom = served === null ? 0 : Number(served[1]);
  if (servedFrom > bounds.start) {
    body.destroy();
    throw new StrataError('STORAGE_ERROR', { message: `S3 served bytes from ${servedFrom} for a range from ${bounds.start}`, details: { bucket: ctx.bucket } });
  }
  return through(ctx, body, new WindowTransform(bounds.start - servedFrom, bounds.end - bounds.start + 1));
}

export async function readObject(ctx: S3Context, hash: ContentHash): Promise<Buffer> {
  const out = await getObject(ctx, hash);
  if (out === null) throw notFound(hash);
  const data = Buffer.from(await s3Call(ctx, 'GetObject (body)', () => out.Body!.transformToByteArray()));
  // The caller promised a small object: hashing it here costs about what receiving it did.
  const actual = hashBuffer(data);
  if (actual !== hash) throw corruptError(hash, actual);
  return data;
}

/** Re-hash the stored bytes on a digest thread (an object may be gigabytes). */
export async function verifyObject(ctx: S3Context, hash: ContentHash): Promise<'ok' | 'missing' | 'corrupt'> {
  const out = await getObject(ctx, hash);
  if (out === null) return 'missing';
  const hasher = new StreamHasher(ctx.digests);
  try {
    for await (const piece of out.Body as Readable) await hasher.write(piece as Uint8Array);
  } catch (error) {
    await hasher.abort();
    throw s3Failure(ctx, 'GetObject (body)', error);
  }
  return `blake3:${await hasher.end()}` === hash ? 'ok' : 'corrupt';
}

interface Listed {
  hash: ContentHash;
  size: number;
  ms: number;
}

async function* listUnder(ctx: S3Context, prefix: string): AsyncGenerator<Listed> {
  let token: string | undefined;
  do {
    const page = await s3Call(ctx, 'ListObjectsV2', () =>
      ctx.client.send(new ListObjectsV2Command({ Bucket: ctx.bucket, Prefix: prefix, ContinuationToken: token, MaxKeys: 1000 })),
    );
    for (const entry of page.Contents ?? []) {
      const hash = entry.Key === undefined ? null : hashOfKey(entry.Key);
      if (hash !== null) yield { hash, size: entry.Size ?? 0, ms: entry.LastModified?.getTime() ?? 0 };
    }
    token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
}

/**
 * Every object once, in key order, with touchedAtMs the newer of the object's and its marker's
 * Last-Modified: the two listings are in the same (hash) order, so they merge in one pass. A listing
 * has no metadata, so this is Last-Modified's resolution (seconds on S3); garbage collection re-checks
 * each candidate with stat(), which reads the millisecond metadata.
 */
export async function* listObjects(ctx: S3Context): AsyncGenerator<ObjectInfo> {
  const markers = listUnder(ctx, `${ctx.prefix}touched/`);
  try {
    let marker = await markers.next();
    for await (const object of listUnder(ctx, `${ctx.prefix}objects/`)) {
      while (marker.done !== true && marker.value.hash < object.hash) marker = await markers.next();
      const touched = marker.done !== true && marker.value.hash === object.hash ? Math.max(object.ms, marker.value.ms) : object.ms;
      yield { hash: object.hash, size: object.size, touchedAtMs: touched };
    }
  } finally {
    await markers.return(undefined);
  }
}

/** Keys under a prefix with their Last-Modified (the sweep of stale temporaries at open). */
export async function* listKeys(ctx: S3Context, prefix: string): AsyncGenerator<{ key: string; ms: number }> {
  let token: string | undefined;
  do {
    const page = await s3Call(ctx, 'ListObjectsV2', () => ctx.client.send(new ListObjectsV2Command({ Bucket: ctx.bucket, Prefix: prefix, ContinuationToken: token })));
    for (const entry of page.Contents ?? []) if (entry.Key !== undefined) yield { key: entry.Key, ms: entry.LastModified?.getTime() ?? 0 };
    token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
}
