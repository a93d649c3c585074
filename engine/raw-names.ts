// File names that are not valid UTF-8 (issue 38 item 4). Linux names are bytes: old archives and
// Latin-1 instruments write `d\xe9bit.csv`. Node decodes such a name into U+FFFD, which names no file
// (it cannot be opened again) and collides with every other name spoiled the same way, so before this
// module such a file was silently neither versioned nor synced.
//
// Display: a name's bytes that are not part of a valid UTF-8 sequence show as `\xHH`
// (`bad\xff\xfename.txt`), the rest as text. That form is for people (status lines, logs); it is not
// a reversible encoding (a real backslash reads the same).

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

/** `bad\xff\xfename.txt`: the bytes of a name that are not UTF-8 as `\xHH`, for people to read. */
export function showNameBytes(bytes: Uint8Array): string {
  let out = '';
  scanUtf8(
    bytes,
    (text) => {
      out += text;
    },
    (byte) => {
      out += hex(byte);
    },
  );
  return out;
}
