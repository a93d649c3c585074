import { StrataError } from './errors.js';
import { hasRawBytes, isCanonicalRawPath, nameBytes } from './raw-names.js';
import { unsafeCharacterReason } from './unsafe-text.js';

// Every user-supplied project path passes through normalizeProjectPath once, at the boundary. The
// result is the only form stored: relative, '/'-separated, no '.', '..', empty or trailing segments.
// Because '..' and absolute paths are rejected here, a project path joined under a root can never
// leave it (the mount and watch hosts additionally resolve real paths against the root).

export const MAX_PATH_BYTES = 4096;
export const MAX_SEGMENT_BYTES = 255;


function reject(reason: string, field: string): never {
  throw new StrataError('INVALID_PATH', { message: `Invalid path: ${reason}`, details: { field, reason } });
}

/** Normalizes a file path; throws INVALID_PATH naming `field`. */
export function normalizeProjectPath(input: unknown, field = 'path'): string {
  const path = normalizeAnyPath(input, field, false);
  if (path === '') reject('empty', field);
  return path;
}

/** Like normalizeProjectPath, but '' (or '/' or '.') means the project root. For listings. */
export function normalizeDirectoryPath(input: unknown, field = 'path'): string {
  return normalizeAnyPath(input, field, true);
}

function normalizeAnyPath(input: unknown, field: string, allowRoot: boolean): string {
  if (typeof input !== 'string') reject('not a string', field);
  if (!input.isWellFormed()) reject('not well-formed Unicode', field);
  if (input.includes('\u0000')) reject('contains NUL', field);
  // Control characters, and invisible format characters such as U+202E, which makes `‮txt.exe` list
  // as `exe.txt` (engine/unsafe-text.ts).
  const unsafe = unsafeCharacterReason(input);
  if (unsafe !== null) reject(unsafe, field);
  if (input.includes('\\')) reject('contains a backslash', field);
  // Names that are not UTF-8 on disk are recorded with U+EF80-U+EFFF for their stray bytes
  // (raw-names.ts): only where those bytes really are stray, so that no two paths name one file.
  const raw = hasRawBytes(input);
  if (raw && !isCanonicalRawPath(input)) reject('its characters U+EF80-U+EFFF stand for bytes that are valid UTF-8 (such names are recorded as their text)', field);
  // Lengths are the kernel's: the bytes on disk.
  const bytes = (text: string) => (raw ? nameBytes(text).length : Buffer.byteLength(text));
  if (bytes(input) > MAX_PATH_BYTES) reject(`longer than ${MAX_PATH_BYTES} bytes`, field);
  if (allowRoot && (input === '' || input === '/' || input === '.')) return '';
  if (input.startsWith('/')) reject('absolute', field);
  const trimmed = input.endsWith('/') && allowRoot ? input.slice(0, -1) : input;
  const segments = trimmed.split('/');
  for (const segment of segments) {
    if (segment === '') reject('empty segment', field);
    if (segment === '.' || segment === '..') reject(`'${segment}' segment`, field);
    if (bytes(segment) > MAX_SEGMENT_BYTES) reject(`a name longer than ${MAX_SEGMENT_BYTES} bytes`, field);
  }
  return segments.join('/').normalize('NFC');
}

/** Lowercase extension with the dot ('' if none): 'a/B.M' -> '.m' */
export function extensionOf(path: string): string {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  return dot <= 0 ? '' : name.slice(dot).toLowerCase();
}

/**
 * Strings in the order of their UTF-8 bytes (= code point order): SQLite's BINARY order of paths,
 * and git's of tree names. UTF-16 code units agree except that a surrogate (a code point above
 * U+FFFF) must sort after U+E000–U+FFFF.
 */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) return codePointRank(x) - codePointRank(y);
    return x - y;
  }
  return a.length - b.length;
}

function codePointRank(unit: number): number {
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}
