// Content hashes: BLAKE3 through @napi-rs/blake-hash (native, 2.31 GB/s on one core here; the npm
// `blake3` package does not install on this machine, hash-wasm is 6x slower — docs/design.md §7).
import { Blake3Hasher, blake3 } from '@napi-rs/blake-hash';
import { StrataError } from './errors.js';
import type { ContentHash } from './types.js';

const CONTENT_HASH_PATTERN = /^blake3:[0-9a-f]{64}$/;

/** Hash bytes already in memory. Synchronous: keep it to small inputs on the event loop (~30 µs per 64 KiB). */
export function hashBuffer(data: Uint8Array): ContentHash {
  // The one-shot call: 3.9 µs for 4.5 KB against 8.5 µs through a Blake3Hasher object (three native
  // calls), which dominated verifying thousands of small objects in a git export.
  return `blake3:${blake3(asBuffer(data)).toString('hex')}`;
}

/**
 * The addon's typings (1.3.4, pinned: later versions lack prebuilds for other platforms in the
 * registry, so `npm ci` rejected the lockfile) name Buffer; it reads any Uint8Array. A view, no copy.
 */
function asBuffer(data: Uint8Array): Buffer {
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** `blake3:` followed by exactly 64 lowercase hex digits; nothing else (no upper case, no whitespace). */
export function isContentHash(s: string): s is ContentHash {
  return CONTENT_HASH_PATTERN.test(s);
}

/**
 * Validate a hash that came from outside (a request, a manifest, a database row). Hashes become file
 * names in the content store, so this is also what keeps `../` and friends out of the object directory.
 */
export function parseContentHash(value: unknown, field = 'hash'): ContentHash {
  if (typeof value === 'string' && isContentHash(value)) return value;
  const shown = typeof value === 'string' ? value.slice(0, 80) : typeof value;
  throw new StrataError('INVALID_ARGUMENT', {
    message: `${field} must be "blake3:" followed by 64 lowercase hex digits`,
    details: { field, value: shown },
  });
}

/** An incremental hasher for data that arrives in chunks. */
export interface IncrementalHasher {
  update(chunk: Uint8Array): void;
  digest(): ContentHash;
}

export function createHasher(): IncrementalHasher {
  const hasher = new Blake3Hasher();
  return {
    update(chunk) {
      hasher.update(asBuffer(chunk));
    },
    digest() {
      return `blake3:${hasher.digest('hex')}`;
    },
  };
}
