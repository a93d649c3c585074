// The S3 writes of the S3 content store: single PutObject, multipart uploads (parts digested off the
// event loop, a few uploaded at once), server-side copies, markers and deletes.
//
// Integrity on the wire: every PutObject and UploadPart carries Content-MD5 and a signed
// x-amz-content-sha256, both computed by the digest threads, so AWS S3 (and MinIO, Ceph...) reject a
// body that arrived different (BadDigest / XAmzContentSHA256Mismatch). s3rver 3.7.1 checks neither:
// it only computes the MD5 of what it stored and returns it as the ETag, so we also compare a
// returned plain-MD5 ETag with ours (that comparison is what catches a mismatch on s3rver). The ETag is
// not the MD5 under SSE-KMS or SSE-C; those uploads skip the comparison.
// The SDK's own flexible checksums are off (requestChecksumCalculation WHEN_REQUIRED, see
// s3-content-store.ts): they would hash on the event loop, and for streams use aws-chunked trailers
// that s3rver cannot parse.
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
  UploadPartCopyCommand,
} from '@aws-sdk/client-s3';
import { StrataError } from '../errors.js';
import { MAX_PART_SIZE, type S3Context, s3Call } from './s3-content-store-config.js';
import type { DigestSession } from './s3-content-store-digest.js';

const GIB = 1024 * (1024 * 1024);
/** CopyObject copies at most 5 GiB; larger objects are copied as a multipart upload of UploadPartCopy. */
const COPY_OBJECT_MAX = 5 * GIB;
const COPY_PART = 1 * GIB;
const MAX_PARTS = 10_000;
export const TOUCHED_META = 'touched-ms';

export interface Sums {
  md5: string;
  sha256: string;
}

/**
 * Part n's length. S3 allows 10,000 parts, and the size of a stream is not known in advance: the part
 * size doubles every 2,000 parts (16 MiB parts reach ~970 GiB) instead of failing at 156 GiB.
 */
export function partLength(ctx: S3Context, partNumber: number): number {
  return Math.min(MAX_PART_SIZE, ctx.partSize * 2 ** Math.floor((partNumber - 1) / 2000));
}

/** Sign the body with a SHA-256 we computed off the event loop (the SDK would hash it in place). */
function signedPayload<T extends { middlewareStack: { add(...args: never[]): void } }>(command: T, sha256: string): T {
  const add = command.middlewareStack.add as unknown as (
    middleware: (next: (args: { request: { headers: Record<string, string> } }) => Promise<unknown>) => (args: { request: { headers: Record<string, string> } }) => Promise<unknown>,
    options: { step: string; name: string },
  ) => void;
  add.call(
    command.middlewareStack,
    (next) => async (args) => {
      args.request.headers['x-amz-content-sha256'] = sha256;
      return next(args);
    },
    { step: 'build', name: 'strataSignedPayload' },
  );
  return command;
}

function checkEtag(ctx: S3Context, operation: string, etag: string | undefined, md5: string, encryption: string | undefined): void {
  if (etag === undefined || (encryption !== undefined && encryption !== 'AES256')) return;
  const plain = etag.replace(/"/g, '');
  if (!/^[0-9a-f]{32}$/.test(plain)) return;
  if (plain !== Buffer.from(md5, 'base64').toString('hex')) {
    throw new StrataError('STORAGE_ERROR', {
      message: `S3 ${operation} for bucket "${ctx.bucket}" at ${ctx.endpoint} stored other bytes than were sent (ETag ${plain})`,
      details: { bucket: ctx.bucket, endpoint: ctx.endpoint },
    });
  }
}

const metadata = (ctx: S3Context) => ({ [TOUCHED_META]: String(ctx.now()) });

export async function putObject(ctx: S3Context, key: string, body: Uint8Array, sums: Sums): Promise<void> {
  const command = signedPayload(
    new PutObjectCommand({ Bucket: ctx.bucket, Key: key, Body: body, ContentLength: body.length, ContentMD5: sums.md5, ContentType: 'application/octet-stream', Metadata: metadata(ctx) }),
    sums.sha256,
  );
  const out = await s3Call(ctx, 'PutObject', () => ctx.client.send(command));
  try {
    checkEtag(ctx, 'PutObject', out.ETag, sums.md5, out.ServerSideEncryption);
  } catch (error) {
    await deleteQuietly(ctx, key);
    throw error;
  }
}

/**
 * A dedup marker: an empty object whose metadata says when the content was last written or
 * deduplicated against. Why a marker and not a self-copy of the object with MetadataDirective REPLACE:
 * the marker costs one tiny PUT whatever the object's size, while a self-copy rewrites the object
 * (a full server-side copy; above 5 GiB a multipart copy), and on s3rver a self-copy does not even
 * change Last-Modified. stat() reads both (the newest wins); delete() removes both.
 */
export async function touch(ctx: S3Context, markerKey: string): Promise<void> {
  await s3Call(ctx, 'PutObject (marker)', () =>
    ctx.client.send(new PutObjectCommand({ Bucket: ctx.bucket, Key: markerKey, Body: new Uint8Array(0), ContentLength: 0, Metadata: metadata(ctx) })),
  );
}

export async function deleteObject(ctx: S3Context, key: string): Promise<void> {
  await s3Call(ctx, 'DeleteObject', () => ctx.client.send(new DeleteObjectCommand({ Bucket: ctx.bucket, Key: key })));
}

/** For cleanup paths: a failure leaves garbage under tmp/ (swept at open), never a wrong object. */
export async function deleteQuietly(ctx: S3Context, key: string): Promise<void> {
  await deleteObject(ctx, key).catch(() => {});
}

function copySource(ctx: S3Context, key: string): string {
  return `${ctx.bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;
}

/** Server-side copy of a finished temporary object to its final key (fresh touched-ms metadata). */
export async function copyObject(ctx: S3Context, from: string, to: string, size: number): Promise<void> {
  if (size <= COPY_OBJECT_MAX) {
    await s3Call(ctx, 'CopyObject', () =>
      ctx.client.send(
        new CopyObjectCommand({ Bucket: ctx.bucket, Key: to, CopySource: copySource(ctx, from), MetadataDirective: 'REPLACE', Metadata: metadata(ctx), ContentType: 'application/octet-stream' }),
      ),
    );
    return;
  }
  const created = await s3Call(ctx, 'CreateMultipartUpload', () =>
    ctx.client.send(new CreateMultipartUploadCommand({ Bucket: ctx.bucket, Key: to, Metadata: metadata(ctx), ContentType: 'application/octet-stream' })),
  );
  const uploadId = created.UploadId!;
  try {
    const parts: Array<{ PartNumber: number; ETag: string }> = [];
    for (let start = 0, n = 1; start < size; start += COPY_PART, n += 1) {
      const end = Math.min(size, start + COPY_PART) - 1;
      const out = await s3Call(ctx, 'UploadPartCopy', () =>
        ctx.client.send(new UploadPartCopyCommand({ Bucket: ctx.bucket, Key: to, UploadId: uploadId, PartNumber: n, CopySource: copySource(ctx, from), CopySourceRange: `bytes=${start}-${end}` })),
      );
      parts.push({ PartNumber: n, ETag: out.CopyPartResult!.ETag! });
    }
    await s3Call(ctx, 'CompleteMultipartUpload', () =>
      ctx.client.send(new CompleteMultipartUploadCommand({ Bucket: ctx.bucket, Key: to, UploadId: uploadId, MultipartUpload: { Parts: parts } })),
    );
  } catch (error) {
    await ctx.client.send(new AbortMultipartUploadCommand({ Bucket: ctx.bucket, Key: to, UploadId: uploadId })).catch(() => {});
    throw error;
  }
}

/**
 * One multipart upload fed part by part. Each part goes to the digest thread first (the upload's
 * BLAKE3, the part's MD5 and SHA-256), then to S3; at most partsInFlight parts are out at once, and
 * push() waits for room, which is the back-pressure on the source. With key null the parts are only
 * hashed (the object is already stored: the bytes are checked, not sent).
 * The object appears only at complete(); abort() discards the parts. Nothing half-written is visible.
 */
export class PartUploader {
  private uploadId: Promise<string> | null = null;
  private readonly parts: Array<{ PartNumber: number; ETag: string }> = [];
  private readonly inflight = new Set<Promise<void>>();
  private failure: { error: unknown } | null = null;
  private count = 0;
  private bytes = 0;
  private state: 'open' | 'completed' | 'aborted' = 'open';
  private readonly session: DigestSession;

  constructor(
    private readonly ctx: S3Context,
    readonly key: string | null,
  ) {
    this.session = ctx.digests.openSession();
  }

  get partCount(): number {
    return this.count;
  }

  /** `part` must be ours to give away: its ArrayBuffer is transferred to the digest thread. */
  async push(part: Uint8Array): Promise<void> {
    while (this.inflight.size >= this.ctx.partsInFlight) await Promise.race(this.inflight);
    if (this.failure !== null) throw this.failure.error;
    const number = ++this.count;
    if (number > MAX_PARTS) throw new StrataError('BODY_TOO_LARGE', { message: 'The content is larger than an S3 multipart upload can hold' });
    const len = part.length;
    this.bytes += len;
    const digested = this.session.part(part.buffer as ArrayBuffer, len, this.key !== null);
    const key = this.key;
    if (key === null) {
      this.track(digested.then(() => {}));
      return;
    }
    const { ctx } = this;
    this.uploadId ??= s3Call(ctx, 'CreateMultipartUpload', () =>
      ctx.client.send(new CreateMultipartUploadCommand({ Bucket: ctx.bucket, Key: key, Metadata: metadata(ctx), ContentType: 'application/octet-stream' })),
    ).then((out) => out.UploadId!);
    const uploadId = this.uploadId;
    this.track(
      (async () => {
        const [id, sums] = await Promise.all([uploadId, digested]);
        const command = signedPayload(
          new UploadPartCommand({ Bucket: ctx.bucket, Key: key, UploadId: id, PartNumber: number, Body: new Uint8Array(sums.buf!, 0, len), ContentLength: len, ContentMD5: sums.md5! }),
          sums.sha256!,
        );
        const out = await s3Call(ctx, 'UploadPart', () => ctx.client.send(command));
        checkEtag(ctx, 'UploadPart', out.ETag, sums.md5!, out.ServerSideEncryption);
        this.parts[number - 1] = { PartNumber: number, ETag: out.ETag! };
      })(),
    );
  }

  /** Waits for every part; the BLAKE3 of all bytes pushed, and their count. */
  async finish(): Promise<{ hex: string; size: number }> {
    await this.drain();
    if (this.failure !== null) throw this.failure.error;
    return { hex: await this.session.end(), size: this.bytes };
  }

  async complete(): Promise<void> {
    const { ctx, key } = this;
    const uploadId = await this.uploadId!;
    await s3Call(ctx, 'CompleteMultipartUpload', () =>
      ctx.client.send(new CompleteMultipartUploadCommand({ Bucket: ctx.bucket, Key: key!, UploadId: uploadId, MultipartUpload: { Parts: this.parts } })),
    );
    this.state = 'completed';
  }

  /** Never throws: it runs on failure paths. An abort that fails leaves parts to the sweep at open. */
  async abort(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'aborted';
    this.session.abort();
    await this.drain(); // S3 may keep parts that were still arriving during an abort
    const uploadId = this.uploadId === null ? null : await this.uploadId.catch(() => null);
    if (uploadId === null || this.key === null) return;
    const { ctx, key } = this;
    await ctx.client.send(new AbortMultipartUploadCommand({ Bucket: ctx.bucket, Key: key, UploadId: uploadId })).catch(() => {});
  }

  private track(task: Promise<void>): void {
    const tracked: Promise<void> = task
      .catch((error: unknown) => {
        this.failure ??= { error };
      })
      .finally(() => this.inflight.delete(tracked));
    this.inflight.add(tracked);
  }

  private async drain(): Promise<void> {
    while (this.inflight.size > 0) await Promise.all(this.inflight);
  }
}
