// File names that are not valid UTF-8 (issue 38 item 4). Linux names are bytes: old archives and
// Latin-1 instruments write `d\xe9bit.csv`. Node decodes such a name into U+FFFD, which names no file
// (it cannot be opened again) and collides with every other name spoiled the same way, so before this
// module such a file was silently neither versioned nor synced.
//
// Recorded: a name's bytes that are not part of a valid UTF-8 sequence (always 0x80-0xFF: an ASCII
// byte is valid on its own) become the private-use code points U+EF80-U+EFFF, byte 0xHH -> U+EF00+0xHH;
// the rest is the text it decodes to. `bad\xff\xfename.txt` is recorded as `bad\uEFFF\uEFFEname.txt`
// in the engine, history, the server and on other workstations, and turned back into the very same
// bytes wherever it is written to disk (diskPath). The map is injective because a name whose own text
// holds a character of U+EF80-U+EFFF is not recorded at all (encodeName gives null: it is listed as
// not versioned, like any name the project cannot record), and a recorded path whose U+EF80-U+EFFF
// characters do not stand for bytes that really are stray (`\uEFC3\uEFA9` would be the bytes of `é`)
// is refused by the path normalizer (isCanonicalRawPath), so no two paths name one file.
//
// Display: the same bytes show as `\xHH` (`bad\xff\xfename.txt`), the rest as text. Project paths
// never hold a backslash (engine/paths.ts refuses it), so `\xHH` in a shown path is unambiguous, and
// the CLI takes it back in path arguments (parseShownPath).

import { isUtf8 } from 'node:buffer';

/** True when `bytes` is a name Node's utf8 decoding gives back unchanged. */
export function isUtf8Name(bytes: Uint8Array): boolean {
  return isUtf8(bytes);
}

/**
 * Splits `bytes` into maximal valid UTF-8 sequences and single bytes that belong to none, left to
 * right (the decoder's own rule: a byte that cannot start or continue a sequence is one error).
 * `onText` gets each valid run as a string, `onByte` each stray byte.
 */
export function scanUtf8(bytes: Uint8Array, onText: (text: string) => void, onByte: (byte: number) => void): void {
  let start = 0;
  let i = 0;
  const flush = (end: number) => {
    if (end > start) onText(Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString('utf8'));
  };
  while (i < bytes.length) {
    const length = sequenceLength(bytes, i);
    if (length > 0) {
      i += length;
      continue;
    }
    flush(i);
    onByte(bytes[i]!);
    i += 1;
    start = i;
  }
  flush(i);
}

/** The length of the valid UTF-8 sequence starting at `i` (RFC 3629: no overlongs, surrogates or > U+10FFFF), else 0. */
function sequenceLength(b: Uint8Array, i: number): number {
  const c = b[i]!;
  if (c < 0x80) return 1;
  const cont = (k: number, lo = 0x80, hi = 0xbf) => i + k < b.length && b[i + k]! >= lo && b[i + k]! <= hi;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c === 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if ((c >= 0xe1 && c <= 0xec) || c === 0xee || c === 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (c === 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;
  if (c === 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c === 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

const hex = (byte: number) => `\\x${byte.toString(16).padStart(2, '0')}`;

/**
 * `bad\xff\xfename.txt`: the bytes of a name that are not UTF-8 as `\xHH`, for people to read. A
 * character of U+EF80-U+EFFF in its text shows as `\uefff`, so that it never reads as the byte it
 * would stand for in a recorded path (showPath).
 */
export function showNameBytes(bytes: Uint8Array): string {
  let out = '';
  scanUtf8(
    bytes,
    (text) => {
      out += text.replace(/[\uef80-\uefff]/g, (char) => `\\u${char.charCodeAt(0).toString(16)}`);
    },
    (byte) => {
      out += hex(byte);
    },
  );
  return out;
}

/** Byte 0xHH (0x80-0xFF) is recorded as U+EF00+0xHH. */
const RAW_BASE = 0xef00;
const RAW_CHAR = /[\uef80-\uefff]/;
const RAW_CHARS = /[\uef80-\uefff]/g;

/** True when a recorded path holds bytes that are not UTF-8 (as U+EF80-U+EFFF). */
export function hasRawBytes(path: string): boolean {
  return RAW_CHAR.test(path);
}

/**
 * How the project records a name (or a path) whose bytes are `bytes`: valid UTF-8 as its text, stray
 * bytes as U+EF80-U+EFFF. null when its text holds one of those characters itself (recording it would
 * make two names one).
 */
export function encodeName(bytes: Uint8Array): string | null {
  // Nearly every name: valid UTF-8, decoded by Node in one call.
  if (isUtf8(bytes)) {
    // (A directory entry's name is a Buffer already: no view to make per name of a 200,000-file walk.)
    const text = (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)).toString('utf8');
    return RAW_CHAR.test(text) ? null : text;
  }
  let out = '';
  let reserved = false;
  scanUtf8(
    bytes,
    (text) => {
      if (RAW_CHAR.test(text)) reserved = true;
      out += text;
    },
    (byte) => {
      out += String.fromCharCode(RAW_BASE + byte);
    },
  );
  return reserved ? null : out;
}

/** The bytes on disk of a recorded name or path: U+EF80-U+EFFF back to the bytes they stand for. */
export function nameBytes(path: string): Buffer {
  if (!hasRawBytes(path)) return Buffer.from(path);
  const parts: Buffer[] = [];
  let start = 0;
  for (let i = 0; i < path.length; i++) {
    const unit = path.charCodeAt(i);
    if (unit < 0xef80 || unit > 0xefff) continue;
    parts.push(Buffer.from(path.slice(start, i)), Buffer.of(unit - RAW_BASE));
    start = i + 1;
  }
  parts.push(Buffer.from(path.slice(start)));
  return Buffer.concat(parts);
}

/** A recorded path whose U+EF80-U+EFFF characters each stand for a byte that really is stray on disk. */
export function isCanonicalRawPath(path: string): boolean {
  return !hasRawBytes(path) || encodeName(nameBytes(path)) === path;
}

/**
 * `root/rel` for the filesystem: a string, or the exact bytes when `rel` holds bytes that are not
 * UTF-8 (Node's fs takes either; a string would be encoded as UTF-8 and name another file).
 */
export function diskPath(root: string, rel: string): string | Buffer {
  const prefix = rel === '' ? root : root.endsWith('/') ? root : `${root}/`;
  if (!hasRawBytes(rel)) return rel === '' ? root : `${prefix}${rel}`;
  return Buffer.concat([Buffer.from(prefix), nameBytes(rel)]);
}

/** A recorded path as people read it: its stray bytes as `\xHH`. */
export function showPath(path: string): string {
  return hasRawBytes(path) ? path.replace(RAW_CHARS, (char) => hex(char.charCodeAt(0) - RAW_BASE)) : path;
}

/**
 * A path typed by a person back to the recorded form: `\xHH` (0x80-0xFF) as the byte it names. (A
 * shell cannot pass those bytes in an argument Node reads intact: it decodes argv as UTF-8.) Anything
 * that is not such an escape is left as it is for the path normalizer to judge.
 */
export function parseShownPath(typed: string): string {
  if (!typed.includes('\\x')) return typed;
  return typed.replace(/\\x([89a-fA-F][0-9a-fA-F])/g, (_m, hh: string) => String.fromCharCode(RAW_BASE + Number.parseInt(hh, 16)));
}
