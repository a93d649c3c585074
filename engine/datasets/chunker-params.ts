// The parameters of the dataset chunker, recorded in every dataset manifest so that the same bytes
// always cut the same way, and a later change of algorithm cannot be mistaken for this one.
//
// `fastcdc-gear64-v1` names exactly (see native/chunker/src/chunker.c for the full statement):
//  - the gear table: G[i] = the (i+1)-th output of splitmix64 seeded with 0x5354524154413634 ("STRATA64");
//  - the rolling hash h = (h << 1) + G[byte] mod 2^64, reset to 0 at each chunk start; the first minSize
//    bytes of a chunk are skipped (FastCDC cut-point skipping);
//  - the cut test on the HIGH bits: cut after a byte when the top `bits` bits of h are zero. Bit k of a
//    gear hash depends on the last k+1 bytes only, so the top bits see a 64-byte window while the low
//    bits would see a handful of bytes;
//  - FastCDC 2020 normalization, level 1: bits = log2(avgSize) + 1 (stricter) for bytes before avgSize
//    within the chunk, log2(avgSize) - 1 (looser) from avgSize on; a cut is forced at maxSize.
// Any change to one of these needs a new algorithm name.
//
// Why level 1 and not the paper's favourite level 2: what matters here is how few shards an edit
// rewrites. After an edit, the new chunking rejoins the old one only when it reaches an old cut point
// the new chunk accepts; an old cut found with the loose mask is refused when it now falls before
// avgSize. Simulated at 256 KiB / 1 MiB / 4 MiB, 1,000 random 1 MiB overwrites of random data, share
// of edits that add <= 3 new shards: level 2 77% (mean chunk 1.10 MiB), level 1 94% (1.17 MiB),
// no normalization 98% (1.16 MiB, but 1.7x the spread of sizes). A one-byte insert adds one shard in
// all three.

export const CHUNKER_ALGORITHM = 'fastcdc-gear64-v1';
export type ChunkerAlgorithm = typeof CHUNKER_ALGORITHM;

/** What a dataset manifest records about how its shards were cut. */
export interface ChunkerParams {
  readonly algorithm: ChunkerAlgorithm;
  /** chunks are longer than this (except the last one of a file) */
  readonly minSize: number;
  /** a power of two: the target mean chunk size */
  readonly avgSize: number;
  /** no chunk is longer than this */
  readonly maxSize: number;
}

const KiB = 1024;
const MiB = 1024 * KiB;

/**
 * 256 KiB / 1 MiB / 4 MiB (issue 4). ~1 MiB shards keep a 2 GB dataset's manifest at ~2,000 entries
 * while one edit rewrites a few MiB; the 1:4 ratios on each side are the FastCDC paper's.
 */
export const DEFAULT_CHUNKER_PARAMS: ChunkerParams = Object.freeze({
  algorithm: CHUNKER_ALGORITHM,
  minSize: 256 * KiB,
  avgSize: MiB,
  maxSize: 4 * MiB,
});

/**
 * Bounds on the sizes. minSize >= 64 so a chunk always holds a full hash window. avgSize up to 2^28
 * keeps the strict cut test (log2(avgSize) + 1 <= 29 bits) within the high 32-bit half of the hash,
 * which the JS implementation relies on. maxSize <= 1 GiB: larger shards would defeat the purpose.
 */
export const CHUNKER_LIMITS = Object.freeze({
  minMinSize: 64,
  minAvgSize: 256,
  maxAvgSize: 2 ** 28,
  maxMaxSize: 2 ** 30,
});

export interface ChunkerParamsInput {
  algorithm?: string;
  minSize?: number;
  avgSize?: number;
  maxSize?: number;
}

/**
 * Complete and validate chunker parameters. Without arguments: the defaults. Given only avgSize, minSize
 * defaults to avgSize / 4 and maxSize to avgSize * 4. Misuse (not integers, avgSize not a power of two,
 * out of bounds, not minSize < avgSize < maxSize, unknown algorithm or field) is a TypeError.
 */
export function chunkerParams(input: ChunkerParamsInput = {}): ChunkerParams {
  if (typeof input !== 'object' || input === null) throw new TypeError('chunker parameters must be an object');
  for (const key of Object.keys(input)) {
    if (key !== 'algorithm' && key !== 'minSize' && key !== 'avgSize' && key !== 'maxSize') {
      throw new TypeError(`unknown chunker parameter "${key}"`);
    }
  }
  if (input.algorithm !== undefined && input.algorithm !== CHUNKER_ALGORITHM) {
    throw new TypeError(`unsupported chunker algorithm "${String(input.algorithm)}" (supported: ${CHUNKER_ALGORITHM})`);
  }
  const avgSize = size(input.avgSize ?? DEFAULT_CHUNKER_PARAMS.avgSize, 'avgSize');
  const minSize = size(input.minSize ?? avgSize / 4, 'minSize');
  const maxSize = size(input.maxSize ?? avgSize * 4, 'maxSize');
  if (!isPowerOfTwo(avgSize) || avgSize < CHUNKER_LIMITS.minAvgSize || avgSize > CHUNKER_LIMITS.maxAvgSize) {
    throw new TypeError(`avgSize must be a power of two from ${CHUNKER_LIMITS.minAvgSize} to 2^28 (got ${avgSize})`);
  }
  if (minSize < CHUNKER_LIMITS.minMinSize) {
    throw new TypeError(`minSize must be at least ${CHUNKER_LIMITS.minMinSize} (got ${minSize})`);
  }
  if (maxSize > CHUNKER_LIMITS.maxMaxSize) throw new TypeError(`maxSize must be at most 2^30 (got ${maxSize})`);
  if (!(minSize < avgSize && avgSize < maxSize)) {
    throw new TypeError(`chunker sizes must satisfy minSize < avgSize < maxSize (got ${minSize}, ${avgSize}, ${maxSize})`);
  }
  return Object.freeze({ algorithm: CHUNKER_ALGORITHM, minSize, avgSize, maxSize });
}

function size(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new TypeError(`${name} must be a non-negative integer (got ${String(value)})`);
  }
  return value;
}

function isPowerOfTwo(value: number): boolean {
  return value > 0 && 2 ** Math.round(Math.log2(value)) === value;
}
