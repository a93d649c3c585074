// A symbolic link's version stores its target: the bytes readlink(2) returns, exactly (no encoding,
// no normalisation, relative or absolute, inside the project or not, dangling or not). Whatever is
// stored must be something symlink(2) can create again on any host that materializes it, so a target
// is 1 to PATH_MAX - 1 bytes and holds no NUL (Linux refuses an empty target with ENOENT and counts
// the terminating NUL in PATH_MAX; a NUL inside would cut the target short).
import { readFile, stat } from 'node:fs/promises';
import { StrataError } from './errors.js';
import type { ContentStore } from './ports/content-store.js';
import type { ContentHash } from './types.js';

export const MAX_SYMLINK_TARGET_BYTES = 4095;

/** The target bytes, or INVALID_SYMLINK_TARGET naming `field`. */
export function checkSymlinkTarget(target: Uint8Array, field = 'content'): Buffer {
  const bytes = Buffer.from(target.buffer, target.byteOffset, target.byteLength);
  if (bytes.length === 0) throw invalidTarget(field, 0, 'empty');
  if (bytes.length > MAX_SYMLINK_TARGET_BYTES) throw invalidTarget(field, bytes.length, 'too long');
  if (bytes.includes(0)) throw invalidTarget(field, bytes.length, 'NUL byte');
  return bytes;
}

function invalidTarget(field: string, size: number, reason: string): StrataError {
  return new StrataError('INVALID_SYMLINK_TARGET', { details: { field, size, reason } });
}

/**
 * Reads a link's target from a write's content (bytes, a stream, or a file holding the target), at most
 * MAX_SYMLINK_TARGET_BYTES + 1 bytes of it: a stream that goes on is refused without being read whole.
 */
export async function readSymlinkTarget(content: AsyncIterable<Uint8Array> | Uint8Array | { file: string }): Promise<Buffer> {
  if (content instanceof Uint8Array) return checkSymlinkTarget(content);
  if ('file' in content) {
    const { size } = await stat(content.file);
    if (size > MAX_SYMLINK_TARGET_BYTES) throw invalidTarget('content', size, 'too long');
    return checkSymlinkTarget(await readFile(content.file));
  }
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of content) {
    chunks.push(Buffer.from(chunk));
    length += chunk.byteLength;
    if (length > MAX_SYMLINK_TARGET_BYTES) break;
  }
  return checkSymlinkTarget(Buffer.concat(chunks, length));
}

/** A stored content that is to be a link's target (sync, git receive): checked without reading a big object. */
export async function checkStoredSymlinkTarget(store: ContentStore, hash: ContentHash, field: string): Promise<void> {
  const info = await store.stat(hash);
  if (info === null) throw new StrataError('CONTENT_NOT_FOUND', { details: { hash } });
  if (info.size > MAX_SYMLINK_TARGET_BYTES) throw invalidTarget(field, info.size, 'too long');
  checkSymlinkTarget(await store.readBuffer(hash), field);
}
