// The S3 content store: objects in a bucket (AWS S3 or an S3-compatible server), one object per
// content hash.
//
//   <prefix>objects/ab/abcdef…   complete, verified objects only (s3-content-store-ingest.ts)
//   <prefix>touched/ab/abcdef…   dedup markers: when the content was last stored again (multipart.ts, touch)
//   <prefix>tmp/<uuid>           uploads whose hash was unknown when they started; removed once copied
//
// "Durable" is S3's: a put resolves once S3 acknowledged the object under its final key. S3 features
// relied on: PutObject, multipart upload (Create, UploadPart, Complete, Abort), CopyObject (and
// UploadPartCopy above 5 GiB), GetObject with Range, HeadObject, HeadBucket, ListObjectsV2,
// DeleteObject, ListMultipartUploads (sweep only, optional), Content-MD5 and signed payload SHA-256,
// user metadata (x-amz-meta-touched-ms).
// Large inputs are hashed by worker threads (s3-content-store-digest.ts; putFile's first pass by the
// shared hash workers). The optional local-file methods (adoptFile, objectFile, objectSpan) are
// omitted: their callers fall back to putFile and open.
import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { AbortMultipartUploadCommand, HeadBucketCommand, ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import type { ChunkerParams } from '../datasets/chunker-params.js';
import { StrataError } from '../errors.js';
import { parseContentHash } from '../hash.js';
import type { ContentStore, DatasetFileOptions, DatasetIngest, ObjectInfo, PutOptions, PutResult, ReadRange } from '../ports/content-store.js';
import type { ContentHash } from '../types.js';
import { HashWorkerPool } from './hash-worker-pool.js';
import { putDatasetFile } from './local-content-store-dataset.js';
import { readLimits } from './local-content-store-ingest.js';
import { markerKey, objectKey, resolveConfig, type S3Context, type S3ContentStoreOptions, s3Call } from './s3-content-store-config.js';
import { DatasetScratch } from './s3-content-store-dataset.js';
import { DigestPool } from './s3-content-store-digest.js';
import { checkExpected, ingestStream, objectExists, Settler, storeWhole, tooLarge } from './s3-content-store-ingest.js';
import { deleteObject, deleteQuietly, touch } from './s3-content-store-multipart.js';
import { hasObject, listKeys, listObjects, openObject, readObject, statObject, verifyObject } from './s3-content-store-read.js';

export { parseObjectsUrl, type S3ContentStoreOptions } from './s3-content-store-config.js';

/** Small objects stored or read at once by putBuffers / readBuffers. */
const BATCH_IN_FLIGHT = 8;
/** Temporaries and multipart uploads older than this are a crashed writer's: removed at open. */
const STALE_MS = 24 * 60 * 60 * 1000;
/** How long close() lets running calls finish (and clean up) before it closes the connections. */
const CLOSE_GRACE_MS = 10_000;
/**
 * A request whose connection carries no byte either way for this long fails (TimeoutError, then the
 * SDK's retries). An inactivity limit, not @smithy's `requestTimeout`: in node-http-handler 4.x that
 * is wall time from sending to the response headers, the upload of the body included, so any bound
 * there would fail a 16 MiB+ part on a slow link; and without `throwOnRequestTimeout` it only logged a
 * warning, so a bucket that accepted connections and never answered hung every call (and serve's
 * start) for good. S3 keeps a slow CompleteMultipartUpload or CopyObject alive by sending whitespace.
 */
const DEFAULT_IDLE_TIMEOUT_MS = 120_000;
/** open() checks the bucket (HeadBucket); this long without an answer is a failure to open. */
const DEFAULT_OPEN_TIMEOUT_MS = 15_000;

export async function openS3ContentStore(options: S3ContentStoreOptions): Promise<ContentStore> {
  const config = await resolveConfig(options);
  const client = new S3Client({
    region: config.region,
    ...(config.endpoint === undefined ? {} : { endpoint: config.endpoint }),
    forcePathStyle: config.forcePathStyle,
    ...(config.credentials === null ? {} : { credentials: config.credentials }),
    // Checksums are ours (Content-MD5 + signed SHA-256, computed off the event loop): see multipart.ts.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 3,
    requestHandler: { connectionTimeout: 10_000, socketTimeout: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS },
  });
  const secrets = [config.credentials?.secretAccessKey, config.credentials?.sessionToken].filter((s): s is string => s !== undefined);
  const where = { bucket: config.bucket, endpoint: config.endpointLabel, secrets };
  const openTimeoutMs = options.openTimeoutMs ?? DEFAULT_OPEN_TIMEOUT_MS;
  try {
    // Bounded as a whole, retries included: `strata serve` waits for this before it listens.
    const abortSignal = AbortSignal.timeout(openTimeoutMs);
    await s3Call(where, 'HeadBucket', () =>
      client.send(new HeadBucketCommand({ Bucket: config.bucket }), { abortSignal }).catch((error: unknown) => {
        if (!abortSignal.aborted) throw error;
        throw new StrataError('STORAGE_ERROR', {
          message: `S3 HeadBucket failed for bucket "${config.bucket}" at ${config.endpointLabel}: no answer within ${openTimeoutMs / 1000} s`,
          details: { bucket: config.bucket, endpoint: config.endpointLabel, s3Code: 'TimeoutError' },
        });
      }),
    );
  } catch (error) {
    client.destroy();
    throw error;
  }
  const ctx: S3Context = {
    ...where,
    client,
    prefix: config.prefix,
    partSize: config.partSize,
    partsInFlight: config.partsInFlight,
    digests: new DigestPool(),
    hashPool: new HashWorkerPool(),
    now: () => Date.now(),
    guard: options.guard,
  };
  const scratch = new DatasetScratch(options.scratchDir);
  await scratch.removeLeftovers();
  const store = new S3ContentStore(ctx, scratch);
  store.sweep();
  return store;
}

class S3ContentStore implements ContentStore {
  private closed = false;
  private readonly running = new Set<Promise<unknown>>();
  private readonly settler: Settler;

  constructor(
    private readonly ctx: S3Context,
    private readonly scratch: DatasetScratch,
  ) {
    this.settler = new Settler(ctx);
    const guard = ctx.guard;
    // Only with a guard (replicas share the bucket): see ContentStore.collect.
    if (guard !== undefined) {
      this.collect = (hash, graceMs) => {
        const valid = this.check(hash);
        return this.track(() => guard.collect(valid, graceMs, () => this.remove(valid)));
      };
    }
  }

  readonly collect?: (hash: ContentHash, graceMs: number) => Promise<boolean>;

  put(source: AsyncIterable<Uint8Array>, options: PutOptions = {}): Promise<PutResult> {
    return this.track(() => ingestStream(this.ctx, this.settler, source, readLimits(options), options.onProgress));
  }

  putBuffer(data: Uint8Array, options: Omit<PutOptions, 'onProgress'> = {}): Promise<PutResult> {
    return this.track(() => this.storeBuffer(data, options, false));
  }

  putBuffers(datas: Uint8Array[]): Promise<PutResult[]> {
    return this.track(() => inBatches(datas, (data) => this.storeBuffer(data, {}, false)));
  }

  /**
   * Two passes: hash the file on a hash worker first (no upload at all if the object exists), then
   * upload it with that hash as the expected one, straight to the final key; the upload re-hashes, so
   * a file changed between the passes fails with CONTENT_CORRUPT instead of storing a wrong object.
   * Reading a local file twice costs far less than an upload to a temporary key plus a server-side copy.
   */
  putFile(absolutePath: string, options: PutOptions = {}): Promise<PutResult> {
    return this.track(async () => {
      const limits = readLimits(options);
      const hashed = await this.ctx.hashPool.hashFile(absolutePath, null, Number.isFinite(limits.maxBytes) ? limits.maxBytes : null);
      if (hashed.kind === 'tooLarge') throw tooLarge(limits.maxBytes);
      checkExpected(limits, hashed.hash);
      if (await objectExists(this.ctx, hashed.hash)) {
        await touch(this.ctx, markerKey(this.ctx, hashed.hash));
        options.onProgress?.(hashed.size);
        return { hash: hashed.hash, size: hashed.size, created: false };
      }
      const source = createReadStream(absolutePath, { highWaterMark: 1 << 20 });
      try {
        return await ingestStream(this.ctx, this.settler, source, { maxBytes: limits.maxBytes, expectedHash: hashed.hash }, options.onProgress);
      } catch (error) {
        if (error instanceof StrataError && error.code === 'CONTENT_CORRUPT') {
          throw new StrataError('CONTENT_CORRUPT', { message: 'The file changed while it was being stored', details: { ...error.details } });
        }
        throw error;
      } finally {
        source.destroy();
      }
    });
  }

  putDatasetFile(absolutePath: string, params: ChunkerParams, options: DatasetFileOptions = {}): Promise<DatasetIngest> {
    return this.track(() =>
      putDatasetFile(
        { has: (hash) => hasObject(this.ctx, this.check(hash)), putBuffer: (data, put) => this.storeBuffer(data, put ?? {}, ownsWholeBuffer(data)) },
        absolutePath,
        params,
        options,
      ),
    );
  }

  putDatasetStream(source: AsyncIterable<Uint8Array>, params: ChunkerParams, options: { maxBytes?: number } = {}): Promise<DatasetIngest> {
    const putShard = (data: Uint8Array, expectedHash: ContentHash) => this.storeBuffer(data, { expectedHash }, true);
    return this.track(() => this.scratch.putStream(putShard, source, params, options.maxBytes ?? Number.POSITIVE_INFINITY));
  }

  has(hash: ContentHash): Promise<boolean> {
    return this.track(() => hasObject(this.ctx, this.check(hash)));
  }

  stat(hash: ContentHash): Promise<ObjectInfo | null> {
    return this.track(() => statObject(this.ctx, this.check(hash)));
  }

  open(hash: ContentHash, range?: ReadRange): Promise<Readable> {
    return this.track(() => openObject(this.ctx, this.check(hash), range));
  }

  readBuffer(hash: ContentHash): Promise<Buffer> {
    return this.track(() => readObject(this.ctx, this.check(hash)));
  }

  readBuffers(hashes: ContentHash[]): Promise<Map<ContentHash, Buffer>> {
    return this.track(async () => {
      const valid = hashes.map((hash) => this.check(hash));
      const datas = await inBatches(valid, (hash) => readObject(this.ctx, hash));
      return new Map(valid.map((hash, i) => [hash, datas[i]!]));
    });
  }

  verify(hash: ContentHash): Promise<'ok' | 'missing' | 'corrupt'> {
    return this.track(() => verifyObject(this.ctx, this.check(hash)));
  }

  delete(hash: ContentHash): Promise<void> {
    return this.track(() => this.remove(this.check(hash)));
  }

  private async remove(hash: ContentHash): Promise<void> {
    // The object first: a marker without its object is ignored; an object without its marker is just older.
    await deleteObject(this.ctx, objectKey(this.ctx, hash));
    await deleteObject(this.ctx, markerKey(this.ctx, hash));
  }

  async *list(): AsyncIterable<ObjectInfo> {
    this.assertOpen();
    yield* listObjects(this.ctx);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Running uploads fail at their next part (SHUTTING_DOWN) and abort their multipart uploads;
    // they get a bounded while to do so before the connections close.
    await this.ctx.digests.close();
    await this.ctx.hashPool.close();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled(this.running), new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS)))]);
    clearTimeout(timer);
    await this.scratch.close();
    this.ctx.client.destroy();
  }

  /**
   * Best effort, in the background: remove what crashed writers left (temporaries under tmp/, multipart
   * uploads) once older than a day. A bucket lifecycle rule (AbortIncompleteMultipartUpload, expiry
   * of tmp/) does the same without a running store. s3rver has no ListMultipartUploads: skipped there.
   */
  sweep(): void {
    const { ctx } = this;
    void this.track(async () => {
      const cutoff = ctx.now() - STALE_MS;
      for await (const { key, ms } of listKeys(ctx, `${ctx.prefix}tmp/`)) if (ms < cutoff) await deleteQuietly(ctx, key);
      let keyMarker: string | undefined;
      let uploadIdMarker: string | undefined;
      for (;;) {
        const page = await ctx.client.send(new ListMultipartUploadsCommand({ Bucket: ctx.bucket, Prefix: ctx.prefix, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }));
        for (const upload of page.Uploads ?? []) {
          if ((upload.Initiated?.getTime() ?? Number.POSITIVE_INFINITY) >= cutoff) continue;
          await ctx.client.send(new AbortMultipartUploadCommand({ Bucket: ctx.bucket, Key: upload.Key, UploadId: upload.UploadId })).catch(() => {});
        }
        if (page.IsTruncated !== true) break;
        keyMarker = page.NextKeyMarker;
        uploadIdMarker = page.NextUploadIdMarker;
      }
    }).catch(() => {
      // best effort: the next open tries again
    });
  }

  private storeBuffer(data: Uint8Array, options: Omit<PutOptions, 'onProgress'>, owned: boolean): Promise<PutResult> {
    const limits = readLimits(options);
    if (data.length > limits.maxBytes) return Promise.reject(tooLarge(limits.maxBytes));
    // Beyond one part: the multipart path (it copies the bytes into its parts as it goes).
    if (data.length > this.ctx.partSize) return ingestStream(this.ctx, this.settler, once(data), limits);
    return storeWhole(this.ctx, this.settler, data, limits, owned);
  }

  /** Every call is tracked so close() can let it finish; calls after close fail with SHUTTING_DOWN. */
  private track<T>(call: () => Promise<T>): Promise<T> {
    let result: Promise<T>;
    try {
      this.assertOpen();
      result = call();
    } catch (error) {
      return Promise.reject(error);
    }
    this.running.add(result);
    const forget = () => this.running.delete(result);
    result.then(forget, forget);
    return result;
  }

  private check(hash: ContentHash): ContentHash {
    return parseContentHash(hash);
  }

  private assertOpen(): void {
    if (this.closed) throw new StrataError('SHUTTING_DOWN', { message: 'The content store is closed' });
  }
}

async function* once(data: Uint8Array): AsyncGenerator<Uint8Array> {
  yield data;
}

/** The buffer is exactly its own ArrayBuffer (a fresh read), so it can be handed to a digest thread. */
function ownsWholeBuffer(data: Uint8Array): boolean {
  return data.byteOffset === 0 && data.byteLength === data.buffer.byteLength && data.byteLength >= 4096;
}

async function inBatches<T, R>(items: readonly T[], each: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < items.length; i = next++) results[i] = await each(items[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(BATCH_IN_FLIGHT, items.length) }, worker));
  return results;
}
