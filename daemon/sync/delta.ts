// A new object as copies from an old one plus the bytes that are new (rsync's idea, issue 14): a
// 1 MiB overwrite in a 2 GB dataset changes two or three ~1 MiB shards and the manifest's entries for
// them; sent whole that is ~3 MiB, sent as a delta against the previous version it is the 1 MiB that
// changed and a few hundred bytes of recipe.
//
// The old bytes are cut into blocks at fixed offsets and indexed by a weak checksum; the new bytes
// are scanned with the same checksum rolled one byte at a time. A hit is confirmed by comparing the
// bytes, then grown forwards and backwards as far as both sides agree, so a copy is not limited to
// whole blocks: the common prefix and suffix of an edited shard are found to the byte.

/** A stretch of the new bytes: a copy of old bytes, or bytes of its own. */
export type DeltaPart = { copy: { offset: number; length: number } } | { literal: { offset: number; length: number } };

const MOD = 1 << 16;

/**
 * Parts that rebuild `target` from `source`: copies (offsets into source) and literals (offsets into
 * target), in target order, covering it exactly. Copies shorter than a block are not looked for.
 */
export function deltaParts(target: Uint8Array, source: Uint8Array, blockSize: number): DeltaPart[] {
  const parts: DeltaPart[] = [];
  if (target.length < blockSize || source.length < blockSize) return target.length === 0 ? [] : [{ literal: { offset: 0, length: target.length } }];
  const index = indexBlocks(source, blockSize);
  let literalFrom = 0;
  let i = 0;
  let { a, b } = checksum(target, 0, blockSize);
  while (i + blockSize <= target.length) {
    const candidates = index.get(((b % MOD) << 16) | (a % MOD));
    const match = candidates === undefined ? -1 : confirm(target, i, source, candidates, blockSize);
    if (match !== -1) {
      // Grow it both ways as far as the bytes agree (backwards only over what is still literal).
      let start = i;
      let from = match;
      while (start > literalFrom && from > 0 && target[start - 1] === source[from - 1]) {
        start--;
        from--;
      }
      let end = i + blockSize;
      let to = match + blockSize;
      while (end < target.length && to < source.length && target[end] === source[to]) {
        end++;
        to++;
      }
      if (start > literalFrom) parts.push({ literal: { offset: literalFrom, length: start - literalFrom } });
      parts.push({ copy: { offset: from, length: end - start } });
      literalFrom = end;
      i = end;
      if (i + blockSize <= target.length) ({ a, b } = checksum(target, i, blockSize));
      continue;
    }
    // Roll one byte: drop target[i], add target[i + blockSize].
    if (i + blockSize < target.length) {
      const out = target[i]!;
      const into = target[i + blockSize]!;
      a = (a - out + into + MOD) % MOD;
      b = (b - ((blockSize * out) % MOD) + a + MOD) % MOD;
    }
    i++;
  }
  if (literalFrom < target.length) parts.push({ literal: { offset: literalFrom, length: target.length - literalFrom } });
  return parts;
}

/** Bytes the parts send as literals. */
export function literalBytes(parts: DeltaPart[]): number {
  let total = 0;
  for (const part of parts) if ('literal' in part) total += part.literal.length;
  return total;
}

function checksum(bytes: Uint8Array, offset: number, length: number): { a: number; b: number } {
  let a = 0;
  let b = 0;
  for (let k = 0; k < length; k++) {
    a = (a + bytes[offset + k]!) % MOD;
    b = (b + a) % MOD;
  }
  return { a, b };
}

function indexBlocks(source: Uint8Array, blockSize: number): Map<number, number[]> {
  const index = new Map<number, number[]>();
  for (let offset = 0; offset + blockSize <= source.length; offset += blockSize) {
    const { a, b } = checksum(source, offset, blockSize);
    const key = (b << 16) | a;
    const list = index.get(key);
    if (list === undefined) index.set(key, [offset]);
    else if (list.length < 8) list.push(offset);
  }
  return index;
}

function confirm(target: Uint8Array, at: number, source: Uint8Array, candidates: number[], blockSize: number): number {
  for (const offset of candidates) {
    if (Buffer.compare(target.subarray(at, at + blockSize), source.subarray(offset, offset + blockSize)) === 0) return offset;
  }
  return -1;
}
