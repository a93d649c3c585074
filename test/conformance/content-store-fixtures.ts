// Helpers for the ContentStore conformance suite: deterministic bytes, stream collection, error checks.
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { expect } from 'vitest';
import { type ErrorCode, StrataError } from '../../engine/errors.js';
import type { ContentStore } from '../../engine/ports/content-store.js';

export type StoreOpener = () => Promise<{ store: ContentStore; cleanup: () => Promise<void> }>;

/** `size` bytes that differ for every seed and are cheap to make (SHA-256 in counter mode). */
export function bytes(size: number, seed = 0): Buffer {
  const out = Buffer.allocUnsafe(size);
  let offset = 0;
  for (let counter = 0; offset < size; counter += 1) {
    const block = createHash('sha256').update(`${seed}:${counter}`).digest();
    offset += block.copy(out, offset, 0, Math.min(block.length, size - offset));
  }
  return out;
}

/** Larger deterministic inputs: one 1 MiB block, each copy stamped with its index. */
export function bigBytes(size: number, seed = 0): Buffer {
  const block = bytes(Math.min(size, 1 << 20), seed);
  const out = Buffer.allocUnsafe(size);
  for (let offset = 0, i = 0; offset < size; offset += block.length, i += 1) {
    block.copy(out, offset, 0, Math.min(block.length, size - offset));
    if (offset + 4 <= size) out.writeUInt32BE(i, offset);
  }
  return out;
}

/** Yield `data` in chunks of `chunkSize` (copies, like a socket would deliver). */
export async function* chunked(data: Uint8Array, chunkSize: number): AsyncGenerator<Uint8Array> {
  for (let offset = 0; offset < data.length; offset += chunkSize) {
    yield Buffer.from(data.subarray(offset, offset + chunkSize));
  }
}

export async function collect(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

/** Consume a stream to its end; resolves with the error it fails with (or null). */
export async function streamError(stream: Readable): Promise<unknown> {
  try {
    await collect(stream);
    return null;
  } catch (error) {
    return error;
  }
}

export async function expectStrataError(
  promise: Promise<unknown>,
  code: ErrorCode,
  message?: RegExp,
): Promise<StrataError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  expect(caught, `expected StrataError ${code}`).toBeInstanceOf(StrataError);
  const error = caught as StrataError;
  expect(error.code).toBe(code);
  if (message !== undefined) expect(error.message).toMatch(message);
  return error;
}

export async function listAll(store: ContentStore): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  for await (const info of store.list()) {
    expect(found.has(info.hash), `listed twice: ${info.hash}`).toBe(false);
    found.set(info.hash, info.size);
  }
  return found;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Malformed hashes every method must refuse with INVALID_ARGUMENT (they would otherwise become paths). */
export const BAD_HASHES = [
  '',
  'blake3:',
  `blake3:${'A'.repeat(64)}`,
  `blake3:${'a'.repeat(63)}`,
  `blake3:${'a'.repeat(65)}`,
  `sha256:${'a'.repeat(64)}`,
  `blake3:../../${'a'.repeat(58)}`,
  `blake3:${'a'.repeat(64)}\n`,
  ` blake3:${'a'.repeat(64)}`,
];
