// Reading objects back: verified whole-object streams, unverified ranges.
import type { FileHandle } from 'node:fs/promises';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { StrataError } from '../errors.js';
import { createHasher, hashBuffer } from '../hash.js';
import type { ReadRange } from '../ports/content-store.js';
import type { ContentHash } from '../types.js';

const READ_CHUNK_BYTES = 1 << 20;

export function corruptError(hash: ContentHash, actual: ContentHash): StrataError {
  return new StrataError('CONTENT_CORRUPT', {
    message: `Stored content does not match its hash ${hash}`,
    details: { hash, actual },
  });
}

/**
 * Clamp a range to the object: `end` past the last byte is cut to it (as HTTP does); a start beyond
 * the object, a negative or fractional bound, or end < start is INVALID_ARGUMENT.
 */
export function resolveRange(range: ReadRange, size: number): { start: number; end: number } {
  const { start, end } = range;
  const valid = Number.isSafeInteger(start) && Number.isSafeInteger(end) && start >= 0 && end >= start && start < size;
  if (!valid) {
    throw new StrataError('INVALID_ARGUMENT', {
      message: `The range ${start}-${end} is not satisfiable for an object of ${size} bytes`,
      details: { field: 'range', start, end, size },
    });
  }
  return { start, end: Math.min(end, size - 1) };
}

/**
 * Hashes bytes as they pass through and fails the stream at the end if they do not match. Hashing on
 * the main thread is acceptable here: BLAKE3 does ~2.3 GB/s, so a 1 MiB chunk costs ~0.45 ms, about
 * what reading it cost; the consumer's pace (a socket, usually) bounds how often that happens.
 * A consumer sees every byte before the error — it must treat the stream as failed only at the end,
 * which is why a ranged read (never verified) is a separate call.
 */
export class VerifyingTransform extends Transform {
  private readonly hasher = createHasher();

  constructor(private readonly expected: ContentHash) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.hasher.update(chunk);
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    const actual = this.hasher.digest();
    callback(actual === this.expected ? null : corruptError(this.expected, actual));
  }
}

/**
 * Stream a loose object from an already opened handle (opened first, so a missing file is a clean
 * 404). A range is not verified, unless `verifyRange`: a shard inside a pack file is a whole object
 * that is a range of its file.
 */
export function streamLooseObject(handle: FileHandle, hash: ContentHash, range?: { start: number; end: number }, verifyRange = false): Readable {
  if (range !== undefined && !verifyRange) {
    return handle.createReadStream({ start: range.start, end: range.end, highWaterMark: READ_CHUNK_BYTES });
  }
  const source = handle.createReadStream({ highWaterMark: READ_CHUNK_BYTES, ...(range === undefined ? {} : { start: range.start, end: range.end }) });
  const verifier = new VerifyingTransform(hash);
  // Errors travel downstream (a read error fails the consumer's stream); destroying the consumer's
  // stream closes the file.
  source.on('error', (error) => verifier.destroy(error));
  verifier.on('close', () => source.destroy());
  return source.pipe(verifier);
}

/**
 * A packed object is at most smallObjectMaxBytes, already in memory: verify it before sending any
 * byte, and fail the stream without data if it is damaged.
 */
export function streamPackedObject(data: Buffer, hash: ContentHash, range?: { start: number; end: number }): Readable {
  if (range !== undefined) return Readable.from([data.subarray(range.start, range.end + 1)], { objectMode: false });
  const actual = hashBuffer(data);
  if (actual !== hash) {
    const failed = new Readable({ read() {} });
    process.nextTick(() => failed.destroy(corruptError(hash, actual)));
    return failed;
  }
  return Readable.from(data.length === 0 ? [] : [data], { objectMode: false });
}
