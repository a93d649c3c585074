// Getting bytes into the S3 store. An object appears under objects/<hash> only complete and
// verified:
//  - Up to one part (partSize, default 16 MiB) is buffered; if the input ends there, it is hashed
//    (here when ≤ 256 KiB, else on a digest thread) and sent with one PutObject to its final key.
//  - Larger inputs go out as a multipart upload while they arrive, hashed part by part:
//    - with an expectedHash (sync uploads), straight to the final key, completed only if the bytes
//      hash to it, else aborted (CONTENT_CORRUPT, nothing stored); if the object already exists the
//      bytes are only hashed, not sent;
//    - without one, the final key is unknown until the last byte: to tmp/<uuid>, completed, copied
//      server-side to the final key (CopyObject; UploadPartCopy above 5 GiB), and removed. Rejected
//      alternative: spooling to a local file first, then uploading: it doubles local disk traffic
//      and starts the upload only after the last byte arrived.
// A second put of the same content stores nothing and refreshes the object's touch marker.
import { createHash } from 'node:crypto';
import { StrataError } from '../errors.js';
import { hashBuffer } from '../hash.js';
import type { PutResult } from '../ports/content-store.js';
import type { ContentHash } from '../types.js';
import { markerKey, objectKey, type S3Context, s3CallOrMissing, tempKey } from './s3-content-store-config.js';
import { copyObject, deleteQuietly, PartUploader, partLength, putObject, type Sums, touch } from './s3-content-store-multipart.js';
import { HeadObjectCommand } from '@aws-sdk/client-s3';

/** Inputs up to this size are hashed on the event loop (~0.5 ms for BLAKE3 + MD5 + SHA-256). */
const DIGEST_HERE_MAX = 256 * 1024;
/** The first part's buffer starts this small and doubles: 50 small concurrent puts must not hold 16 MiB each. */
const FIRST_BUFFER = 64 * 1024;
/**
 * Give the event loop a turn after copying this much. A source that never waits (an in-memory
 * generator) keeps for-await in microtasks, and push() only waits once partsInFlight parts are out:
 * without this, copying the first 64 MiB of such a source held the loop for 60-70 ms.
 */
const YIELD_EVERY_BYTES = 2 * 1024 * 1024;

export interface Limits {
  maxBytes: number;
  expectedHash: ContentHash | undefined;
}

export function tooLarge(maxBytes: number): StrataError {
  return new StrataError('BODY_TOO_LARGE', { message: `The content is larger than the limit of ${maxBytes} bytes`, details: { maxBytes } });
}

export function checkExpected(limits: Limits, actual: ContentHash): void {
  if (limits.expectedHash !== undefined && limits.expectedHash !== actual) {
    throw new StrataError('CONTENT_CORRUPT', {
      message: `The content hashes to ${actual}, not to the expected ${limits.expectedHash}`,
      details: { expected: limits.expectedHash, actual },
    });
  }
}

/**
 * Asked before deduplicating against the object: with a guard, touched first (object-guard.ts). A hash
 * the guard had no record of is not stored (or came in without a guard, and is then stored again, the
 * same bytes): no HEAD request for it, which halves the S3 requests of a new small object.
 */
export async function objectExists(ctx: S3Context, hash: ContentHash): Promise<boolean> {
  if (ctx.guard !== undefined && (await ctx.guard.touch([hash])).has(hash)) return false;
  const head = await s3CallOrMissing(ctx, 'HeadObject', () => ctx.client.send(new HeadObjectCommand({ Bucket: ctx.bucket, Key: objectKey(ctx, hash) })));
  return head !== null;
}

/**
 * Puts of the same content in this process settle one at a time: the first creates (or finds and
 * touches) the object, the others then report created: false without another request. Across
 * processes two writers can both create it: they write the same bytes, and both say created.
 * (S3's conditional writes, If-None-Match: *, would settle that too, but s3rver and some S3-compatible
 * servers do not support them.)
 */
export class Settler {
  private readonly running = new Map<ContentHash, Promise<boolean>>();

  constructor(private readonly ctx: S3Context) {}

  /** `create` stores the object; `discard` drops what this writer staged when it is not needed. */
  async settle(hash: ContentHash, create: () => Promise<void>, discard: () => Promise<void>): Promise<boolean> {
    for (let running = this.running.get(hash); running !== undefined; running = this.running.get(hash)) {
      if (await running.then(() => true, () => false)) {
        await discard();
        return false;
      }
    }
    const attempt = (async () => {
      if (await objectExists(this.ctx, hash)) {
        await touch(this.ctx, markerKey(this.ctx, hash));
        await discard();
        return false;
      }
      await create();
      return true;
    })();
    this.running.set(hash, attempt);
    try {
      return await attempt;
    } finally {
      if (this.running.get(hash) === attempt) this.running.delete(hash);
    }
  }
}

function digestHere(data: Uint8Array): Sums & { hash: ContentHash } {
  return {
    hash: hashBuffer(data),
    md5: createHash('md5').update(data).digest('base64'),
    sha256: createHash('sha256').update(data).digest('hex'),
  };
}

/**
 * One object of at most one part, in memory. `owned`: the caller gives the buffer away (it may be
 * transferred to a digest thread); otherwise a larger one is copied first.
 */
export async function storeWhole(ctx: S3Context, settler: Settler, data: Uint8Array, limits: Limits, owned: boolean): Promise<PutResult> {
  if (data.length > limits.maxBytes) throw tooLarge(limits.maxBytes);
  const size = data.length; // read now: an owned buffer is detached once transferred
  let body = data;
  let digest: Sums & { hash: ContentHash };
  if (data.length <= DIGEST_HERE_MAX) {
    digest = digestHere(data);
  } else {
    const own = owned && data.byteOffset === 0 ? data : new Uint8Array(data);
    const reply = await ctx.digests.whole(own.buffer as ArrayBuffer, size);
    body = new Uint8Array(reply.buf, 0, size);
    digest = { hash: `blake3:${reply.hash}`, md5: reply.md5, sha256: reply.sha256 };
  }
  checkExpected(limits, digest.hash);
  const created = await settler.settle(
    digest.hash,
    () => putObject(ctx, objectKey(ctx, digest.hash), body, digest),
    async () => {},
  );
  return { hash: digest.hash, size, created };
}

export async function ingestStream(
  ctx: S3Context,
  settler: Settler,
  source: AsyncIterable<Uint8Array>,
  limits: Limits,
  onProgress?: (bytes: number) => void,
): Promise<PutResult> {
  let buffer = new Uint8Array(0);
  let fill = 0;
  let total = 0;
  let uploader: PartUploader | null = null;
  let sinceYield = 0;
  try {
    for await (const chunk of source) {
      if (!(chunk instanceof Uint8Array)) throw new TypeError('put() sources must yield Uint8Array chunks');
      if (chunk.length === 0) continue;
      total += chunk.length;
      // Throwing inside for-await calls the iterator's return(): a Readable source stops being read.
      if (total > limits.maxBytes) throw tooLarge(limits.maxBytes);
      let offset = 0;
      while (offset < chunk.length) {
        const limit = partLength(ctx, (uploader?.partCount ?? 0) + 1);
        if (fill === limit) {
          // A full part and more bytes: it is not the only one, so this is a multipart upload.
          uploader ??= await startUpload(ctx, limits);
          await uploader.push(buffer);
          buffer = new Uint8Array(partLength(ctx, uploader.partCount + 1));
          fill = 0;
        }
        if (fill === buffer.length) {
          // The copy: a source may reuse its buffer for the next chunk.
          const grown = new Uint8Array(Math.min(limit, Math.max(buffer.length * 2, fill + chunk.length - offset, FIRST_BUFFER)));
          grown.set(buffer.subarray(0, fill));
          buffer = grown;
        }
        const n = Math.min(buffer.length - fill, chunk.length - offset, YIELD_EVERY_BYTES);
        buffer.set(chunk.subarray(offset, offset + n), fill);
        fill += n;
        offset += n;
        sinceYield += n;
        if (sinceYield >= YIELD_EVERY_BYTES) {
          sinceYield = 0;
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
      }
      onProgress?.(total);
    }
    if (uploader === null) return await storeWhole(ctx, settler, buffer.subarray(0, fill), limits, true);
    await uploader.push(buffer.subarray(0, fill));
    const { hex, size } = await uploader.finish();
    const hash: ContentHash = `blake3:${hex}`;
    checkExpected(limits, hash);
    return { hash, size, created: await commit(ctx, settler, uploader, hash, size) };
  } catch (error) {
    // Nothing may be left behind; the caller gets the original error (the source's own, BODY_TOO_LARGE...).
    await uploader?.abort();
    throw error;
  }
}

/** With an expected hash: to the final key, or nowhere (hash only) if the object is already stored. */
async function startUpload(ctx: S3Context, limits: Limits): Promise<PartUploader> {
  const expected = limits.expectedHash;
  if (expected === undefined) return new PartUploader(ctx, tempKey(ctx));
  return new PartUploader(ctx, (await objectExists(ctx, expected)) ? null : objectKey(ctx, expected));
}

async function commit(ctx: S3Context, settler: Settler, uploader: PartUploader, hash: ContentHash, size: number): Promise<boolean> {
  const marker = markerKey(ctx, hash);
  if (uploader.key === null) {
    await touch(ctx, marker);
    return false;
  }
  if (uploader.key === objectKey(ctx, hash)) {
    // S3 dates a multipart object from its CreateMultipartUpload: the marker dates it from now.
    return settler.settle(
      hash,
      async () => {
        await uploader.complete();
        await touch(ctx, marker);
      },
      () => uploader.abort(),
    );
  }
  const temp = uploader.key;
  await uploader.complete();
  try {
    return await settler.settle(hash, () => copyObject(ctx, temp, objectKey(ctx, hash), size), async () => {});
  } finally {
    await deleteQuietly(ctx, temp);
  }
}
