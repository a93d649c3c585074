// `Range: bytes=…` for file reads. One range only: a multi-range request is served whole (RFC 9110
// lets a server ignore Range), as is any header we cannot parse.

import type { ReadRange } from '../engine/ports/content-store.js';

export type RangeDecision = ReadRange | 'unsatisfiable' | null;

const SINGLE_RANGE = /^bytes=(\d{0,16})-(\d{0,16})$/;

export function resolveRange(header: string | undefined, size: number): RangeDecision {
  if (header === undefined) return null;
  const match = SINGLE_RANGE.exec(header.trim());
  if (match === null) return null;
  const [, first, last] = match;
  if (first === '' && last === '') return null;
  if (first === '') {
    // suffix: the last n bytes
    const n = Number(last);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(first);
  if (last !== '' && Number(last) < start) return null; // syntactically invalid: ignored
  if (start >= size) return 'unsatisfiable';
  return { start, end: last === '' ? size - 1 : Math.min(Number(last), size - 1) };
}

/** `If-None-Match` against a strong ETag ('*' or any listed tag, weak or strong, matches). */
export function etagMatches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t === etag || t === `W/${etag}`;
  });
}
