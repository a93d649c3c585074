// Characters that no name Strata stores (a path segment, a project name, a key's purpose, a dataset
// pattern) may hold. Control characters break terminals, logs and line-based formats. Unicode format
// characters (general category Cf) are invisible and change how the text around them is shown: with
// U+202E (right-to-left override) `‮txt.exe` lists as `exe.txt`, and zero-width or tag characters make
// two different names look identical. Both kinds are refused wherever a name enters.
//
// Two format characters are kept: ZERO WIDTH NON-JOINER (U+200C) and ZERO WIDTH JOINER (U+200D) are
// part of how Persian, Hindi and other scripts are spelled, and of emoji sequences; refusing them would
// refuse ordinary file names in those languages. Neither reorders text.

/** C0/C1 controls, DEL, line/paragraph separators, and format characters except ZWNJ/ZWJ. */
export const UNSAFE_CHARACTER = /(?![\u200c\u200d])[\p{Cc}\p{Cf}\u2028\u2029]/u;

/**
 * Why `text` is refused, for an error message, or null when it is fine. Names the character by code
 * point and never echoes it: echoed, a U+202E would reorder the error message itself.
 */
export function unsafeCharacterReason(text: string): string | null {
  const match = UNSAFE_CHARACTER.exec(text);
  if (match === null) return null;
  const codePoint = match[0].codePointAt(0)!;
  const name = `U+${codePoint.toString(16).toUpperCase().padStart(4, '0')}`;
  return /\p{Cc}|[\u2028\u2029]/u.test(match[0])
    ? `contains a control character (${name})`
    : `contains an invisible formatting character (${name}, e.g. a bidirectional override)`;
}

const UNSAFE_GLOBAL = new RegExp(UNSAFE_CHARACTER.source, 'gu');

/**
 * `text` as a JSON string literal whose unsafe characters are all escaped (JSON.stringify leaves
 * U+202E and the C1 controls as they are): for naming a refused name in a message or a log line.
 */
export function quoteSafely(text: string): string {
  return JSON.stringify(text).replace(UNSAFE_GLOBAL, (char) => `\\u${char.codePointAt(0)!.toString(16).padStart(4, '0')}`);
}
