// The pure-TypeScript twin of native/chunker/src/chunker.c (algorithm fastcdc-gear64-v1, described in
// chunker-params.ts): used when the addon is not built. test/dataset-chunker.test.ts checks that both
// cut at exactly the same offsets, whatever the buffer splits.
//
// This file has no imports and uses only erasable TypeScript syntax on purpose: the chunk-file worker
// loads it by URL (engine/storage/chunk-file.ts), as dist/.../gear-chunker-js.js after a build and as
// this .ts file under vitest, where Node 24 strips the types itself.
//
// JavaScript has no fast 64-bit integers (BigInt is ~50x slower), so the 64-bit hash is kept as two
// 32-bit halves in doubles: lo' = 2·lo + G_lo[b] (< 3·2^32, exact), carry = floor(lo' / 2^32),
// hi' = (2·hi + G_hi[b] + carry) mod 2^32. The cut test needs the high half only: the top `bits` bits of
// h are zero iff hi < 2^(32 - bits), since bits <= 29 (CHUNKER_LIMITS).

const TWO_32 = 4294967296;

/** The gear table seed: ASCII "STRATA64". */
export const GEAR_SEED = 0x5354524154413634n;

/** G[i] = the (i+1)-th output of splitmix64 seeded with GEAR_SEED. */
export function gearTable(): BigUint64Array {
  const mask = (1n << 64n) - 1n;
  const table = new BigUint64Array(256);
  let state = GEAR_SEED;
  for (let i = 0; i < 256; i++) {
    state = (state + 0x9e3779b97f4a7c15n) & mask;
    let z = state;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & mask;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & mask;
    table[i] = z ^ (z >> 31n);
  }
  return table;
}

/**
 * A streaming chunker: push() successive buffers, get back the absolute end offset of every chunk they
 * closed; finish() returns the end of the last, partial chunk (if any) and starts a new stream at 0.
 * Sizes must come from chunkerParams() (this class does not validate them).
 */
export class JsGearChunker {
  private readonly gearHi = new Float64Array(256);
  private readonly gearLo = new Float64Array(256);
  private readonly minSize: number;
  private readonly avgSize: number;
  private readonly maxSize: number;
  /** cut when hi < limit: 2^(32 - bits) */
  private readonly limitStrict: number;
  private readonly limitLoose: number;
  private hi = 0;
  private lo = 0;
  /** bytes of the open chunk consumed so far */
  private len = 0;
  /** bytes consumed since the stream started */
  private pos = 0;

  constructor(minSize: number, avgSize: number, maxSize: number) {
    const table = gearTable();
    for (let i = 0; i < 256; i++) {
      this.gearHi[i] = Number(table[i]! >> 32n);
      this.gearLo[i] = Number(table[i]! & 0xffffffffn);
    }
    this.minSize = minSize;
    this.avgSize = avgSize;
    this.maxSize = maxSize;
    const bits = Math.round(Math.log2(avgSize));
    this.limitStrict = 2 ** (32 - (bits + 1));
    this.limitLoose = 2 ** (32 - (bits - 1));
  }

  push(bytes: Uint8Array): number[] {
    const cuts: number[] = [];
    const gearHi = this.gearHi;
    const gearLo = this.gearLo;
    const n = bytes.length;
    let hi = this.hi;
    let lo = this.lo;
    let len = this.len;
    let i = 0;
    while (i < n) {
      if (len < this.minSize) {
        const skip = Math.min(this.minSize - len, n - i);
        len += skip;
        i += skip;
        continue;
      }
      const strict = len < this.avgSize;
      const limit = strict ? this.limitStrict : this.limitLoose;
      const end = i + Math.min((strict ? this.avgSize : this.maxSize) - len, n - i);
      const start = i;
      let cut = false;
      while (i < end) {
        const b = bytes[i]!;
        i++;
        const l = lo * 2 + gearLo[b]!;
        hi = (hi * 2 + gearHi[b]! + ((l / TWO_32) | 0)) >>> 0;
        lo = l >>> 0;
        if (hi < limit) {
          cut = true;
          break;
        }
      }
      len += i - start;
      if (cut || len === this.maxSize) {
        cuts.push(this.pos + i);
        len = 0;
        hi = 0;
        lo = 0;
      }
    }
    this.hi = hi;
    this.lo = lo;
    this.len = len;
    this.pos += n;
    return cuts;
  }

  finish(): number[] {
    const cuts = this.len > 0 ? [this.pos] : [];
    this.hi = 0;
    this.lo = 0;
    this.len = 0;
    this.pos = 0;
    return cuts;
  }
}
