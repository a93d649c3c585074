import { StrataError } from '../errors.js';

// Cursors are opaque to callers: base64url of a small JSON object naming the listing they belong to
// (`k`) and the last key returned (`s`). The kind tag makes a cursor from one listing fail loudly in
// another instead of silently skipping rows. Keyset cursors (not offsets) stay correct while rows are
// added: a page never repeats or skips a row that existed when the first page was read.

export type CursorKind = 'history' | 'entries' | 'snapshots' | 'snapshot-entries' | 'audit';

// A path is at most 4096 bytes; its JSON escaping and base64 stay well below this.
const MAX_CURSOR_LENGTH = 32_768;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

function invalid(reason: string): never {
  throw new StrataError('INVALID_CURSOR', { details: { field: 'cursor', reason } });
}

export function encodeCursor(kind: CursorKind, key: number | string): string {
  return Buffer.from(JSON.stringify({ k: kind, s: key }), 'utf8').toString('base64url');
}

function decode(kind: CursorKind, cursor: string): unknown {
  if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH || !BASE64URL.test(cursor)) {
    invalid('not a cursor');
  }
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    invalid('not a cursor');
  }
  if (typeof value !== 'object' || value === null || !('k' in value) || !('s' in value)) invalid('not a cursor');
  if (value.k !== kind) invalid(`not a ${kind} cursor`);
  return value.s;
}

/** The sequence number a numeric cursor continues after. */
export function decodeSeqCursor(kind: CursorKind, cursor: string): number {
  const key = decode(kind, cursor);
  if (typeof key !== 'number' || !Number.isSafeInteger(key) || key < 0) invalid('bad position');
  return key;
}

/** The path a path-ordered cursor continues after. */
export function decodePathCursor(kind: CursorKind, cursor: string): string {
  const key = decode(kind, cursor);
  if (typeof key !== 'string' || key.length === 0) invalid('bad position');
  return key;
}

/** Caller misuse (not bad input): the engine clamps limits before calling the repository. */
export function checkLimit(limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new TypeError(`limit must be a positive integer, got ${limit}`);
  return limit;
}

/**
 * The smallest string greater than every string that starts with `prefix`, in code point order
 * (which is the byte order SQLite's BINARY collation uses on UTF-8). Lets a prefix filter be an index
 * range instead of LIKE, which would treat '%' and '_' in paths as wildcards. Null for '' and for a
 * prefix made only of U+10FFFF: then `path >= prefix` alone is exact.
 */
export function prefixUpperBound(prefix: string): string | null {
  const chars = Array.from(prefix);
  while (chars.length > 0) {
    const last = chars.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) {
      // Surrogate code points never occur in well-formed strings; skip over them.
      const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
      return chars.join('') + String.fromCodePoint(next);
    }
  }
  return null;
}
