// C-style path quoting as git's fast-import reads it (`unquote_c_style` in git's quote.c). A path
// that starts with `"` is read as a quoted string; anything else runs to the end of the line (or, for
// the source of `C`/`R`, to the first space). Quoted strings hold raw UTF-8 bytes or these escapes.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

// Escape letters git writes and reads, by byte value.
const ESCAPES = new Map<number, number>([
  [0x07, 0x61], // \a
  [0x08, 0x62], // \b
  [0x09, 0x74], // \t
  [0x0a, 0x6e], // \n
  [0x0b, 0x76], // \v
  [0x0c, 0x66], // \f
  [0x0d, 0x72], // \r
  [QUOTE, QUOTE],
  [BACKSLASH, BACKSLASH],
]);
const UNESCAPES = new Map<number, number>([...ESCAPES].map(([byte, letter]) => [letter, byte]));

/**
 * True when fast-import would misread the path unquoted: a leading `"` (it would start a quoted
 * string) or a control byte (LF ends the command; git itself quotes the others).
 */
export function pathNeedsQuoting(path: Uint8Array): boolean {
  if (path[0] === QUOTE) return true;
  for (let i = 0; i < path.length; i++) {
    const byte = path[i]!;
    if (byte < 0x20 || byte === 0x7f) return true;
  }
  return false;
}

/** `"..."` with `"`, `\` and control bytes escaped; bytes ≥ 0x80 stay raw (fast-import accepts both). */
export function quotePath(path: Uint8Array): Buffer {
  const out: number[] = [QUOTE];
  for (let i = 0; i < path.length; i++) {
    const byte = path[i]!;
    const letter = ESCAPES.get(byte);
    if (letter !== undefined) out.push(BACKSLASH, letter);
    else if (byte < 0x20 || byte === 0x7f) out.push(BACKSLASH, 0x30 + (byte >> 6), 0x30 + ((byte >> 3) & 7), 0x30 + (byte & 7));
    else out.push(byte);
  }
  out.push(QUOTE);
  return Buffer.from(out);
}

/**
 * Reads a quoted string starting at `line[start]` (which must be `"`). Returns the unquoted bytes and
 * the index just past the closing quote, or null if the quoting is malformed (unterminated, unknown
 * escape, bad octal).
 */
export function unquotePath(line: Uint8Array, start: number): { bytes: Buffer; end: number } | null {
  if (line[start] !== QUOTE) return null;
  const out: number[] = [];
  let i = start + 1;
  while (i < line.length) {
    const byte = line[i]!;
    if (byte === QUOTE) return { bytes: Buffer.from(out), end: i + 1 };
    if (byte !== BACKSLASH) {
      out.push(byte);
      i++;
      continue;
    }
    const next = line[i + 1];
    if (next === undefined) return null;
    const plain = UNESCAPES.get(next);
    if (plain !== undefined) {
      out.push(plain);
      i += 2;
      continue;
    }
    // \ooo: exactly three octal digits, the first 0–3 (a byte)
    const d0 = next - 0x30;
    const d1 = (line[i + 2] ?? 0) - 0x30;
    const d2 = (line[i + 3] ?? 0) - 0x30;
    if (d0 < 0 || d0 > 3 || d1 < 0 || d1 > 7 || d2 < 0 || d2 > 7) return null;
    out.push((d0 << 6) | (d1 << 3) | d2);
    i += 4;
  }
  return null;
}
