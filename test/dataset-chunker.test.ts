// The dataset chunker (fastcdc-gear64-v1): parameters, determinism, bounds, edit locality, native/JS
// agreement and chunkFile on real temp files. Inputs are AES-128-CTR keystreams: deterministic on any
// Node version and ~3 GB/s to produce.
import { createCipheriv } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CHUNKER_ALGORITHM, type ChunkerParams, chunkerParams, DEFAULT_CHUNKER_PARAMS } from '../engine/datasets/chunker-params.js';
import { type ChunkerImplementation, chunkBytes, chunkerImplementation, createChunker, nativeChunkerPath } from '../engine/datasets/gear-chunker.js';
import { GEAR_SEED, gearTable } from '../engine/datasets/gear-chunker-js.js';
import { hashBuffer } from '../engine/hash.js';
import { chunkFile } from '../engine/storage/chunk-file.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const SMALL = chunkerParams({ minSize: 1024, avgSize: 4096, maxSize: 16384 });
const MEDIUM = chunkerParams({ avgSize: 16 * KiB });
const IMPLEMENTATIONS: ChunkerImplementation[] = ['native', 'js'];

function pseudoRandom(seed: number, size: number): Buffer {
  const key = Buffer.alloc(16);
  key.writeUInt32LE(seed);
  return createCipheriv('aes-128-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(size));
}

/** A small deterministic PRNG for split sizes (mulberry32). */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

function ends(chunks: Array<{ offset: number; size: number }>): number[] {
  return chunks.map((c) => c.offset + c.size);
}

/** Cut ends when `data` is pushed in random pieces from 0 bytes to `maxPiece` bytes. */
function endsWithSplits(data: Uint8Array, params: ChunkerParams, implementation: ChunkerImplementation, seed: number, maxPiece: number): number[] {
  const chunker = createChunker(params, { implementation });
  const next = prng(seed);
  const out: number[] = [];
  for (let at = 0; at < data.length; ) {
    const piece = Math.min(next() % (maxPiece + 1), data.length - at);
    out.push(...chunker.push(data.subarray(at, at + piece)));
    at += piece;
  }
  out.push(...chunker.finish());
  return out;
}

function chunkHashes(data: Uint8Array, params: ChunkerParams, implementation?: ChunkerImplementation): Array<{ hash: string; size: number }> {
  return chunkBytes(data, params, implementation === undefined ? {} : { implementation }).map((c) => ({
    hash: hashBuffer(data.subarray(c.offset, c.offset + c.size)),
    size: c.size,
  }));
}

/** Chunks of `edited` whose hash the original does not have: what storing the edit would add. */
function newChunks(original: Uint8Array, edited: Uint8Array, params: ChunkerParams, implementation?: ChunkerImplementation) {
  const known = new Set(chunkHashes(original, params, implementation).map((c) => c.hash));
  const fresh = chunkHashes(edited, params, implementation).filter((c) => !known.has(c.hash));
  return { count: fresh.length, bytes: fresh.reduce((sum, c) => sum + c.size, 0) };
}

function insertByte(data: Buffer, at: number, value: number): Buffer {
  return Buffer.concat([data.subarray(0, at), Buffer.from([value]), data.subarray(at)]);
}

function overwrite(data: Buffer, at: number, replacement: Uint8Array): Buffer {
  const copy = Buffer.from(data);
  copy.set(replacement, at);
  return copy;
}

describe('chunker parameters', () => {
  it('defaults to 256 KiB / 1 MiB / 4 MiB under a named algorithm, as a manifest records them', () => {
    expect(DEFAULT_CHUNKER_PARAMS).toEqual({ algorithm: 'fastcdc-gear64-v1', minSize: 256 * KiB, avgSize: MiB, maxSize: 4 * MiB });
    expect(chunkerParams()).toEqual(DEFAULT_CHUNKER_PARAMS);
    expect(JSON.parse(JSON.stringify(chunkerParams({ avgSize: 64 * KiB })))).toEqual({
      algorithm: CHUNKER_ALGORITHM,
      minSize: 16 * KiB,
      avgSize: 64 * KiB,
      maxSize: 256 * KiB,
    });
    // A recorded object reads back as itself.
    expect(chunkerParams(JSON.parse(JSON.stringify(SMALL)))).toEqual(SMALL);
    expect(Object.isFrozen(chunkerParams())).toBe(true);
  });

  it('rejects misuse with a TypeError naming the problem', () => {
    const bad: Array<[unknown, RegExp]> = [
      [{ avgSize: 3000 }, /power of two/],
      [{ avgSize: 128 }, /power of two from 256/],
      [{ avgSize: 2 ** 29, minSize: 1024, maxSize: 2 ** 30 }, /power of two/],
      [{ minSize: 32, avgSize: 4096, maxSize: 16384 }, /at least 64/],
      [{ minSize: 4096, avgSize: 4096, maxSize: 16384 }, /minSize < avgSize < maxSize/],
      [{ minSize: 1024, avgSize: 4096, maxSize: 4096 }, /minSize < avgSize < maxSize/],
      [{ minSize: 1024, avgSize: 4096, maxSize: 2 ** 31 }, /at most 2\^30/],
      [{ minSize: 1.5, avgSize: 4096, maxSize: 16384 }, /integer/],
      [{ minSize: -1, avgSize: 4096, maxSize: 16384 }, /integer/],
      [{ avgSize: Number.NaN }, /integer/],
      [{ avgSize: '4096' }, /integer/],
      [{ algorithm: 'fastcdc-gear64-v2' }, /unsupported chunker algorithm/],
      [{ avgSize: 4096, window: 64 }, /unknown chunker parameter "window"/],
      [null, /must be an object/],
    ];
    for (const [input, message] of bad) {
      expect(() => chunkerParams(input as Parameters<typeof chunkerParams>[0]), JSON.stringify(input)).toThrow(TypeError);
      expect(() => chunkerParams(input as Parameters<typeof chunkerParams>[0]), JSON.stringify(input)).toThrow(message);
    }
    // createChunker validates too, and so does the addon itself for direct callers.
    expect(() => createChunker({ ...SMALL, minSize: 8192 })).toThrow(TypeError);
  });
});

describe('chunk boundaries', () => {
  it('uses the native addon, built by scripts/env.sh', () => {
    expect(nativeChunkerPath()).toMatch(/native\/chunker\/build\/Release\/strata_chunker\.node$/);
    expect(chunkerImplementation()).toBe('native');
    expect(createChunker(SMALL).implementation).toBe('native');
    expect(createChunker(SMALL, { implementation: 'js' }).implementation).toBe('js');
  });

  it('builds the documented gear table (splitmix64 seeded with "STRATA64")', () => {
    expect(Buffer.from(GEAR_SEED.toString(16), 'hex').toString('latin1')).toBe('STRATA64');
    const table = gearTable();
    // splitmix64(seed 0) starts 0xe220a8397b1dcdaf: checked with the reference C code, same mixing.
    expect([table[0], table[1], table[255]]).toEqual([0xcaf4460416ac69edn, 0x7d52dfa68c15d881n, 0xcb37350bca084fa5n]);
    expect(new Set(table).size).toBe(256);
  });

  it.each(IMPLEMENTATIONS)('%s: cuts a seeded input at known offsets (regression anchor)', (implementation) => {
    const data = pseudoRandom(7, MiB);
    const chunks = chunkBytes(data, SMALL, { implementation });
    expect(chunks).toHaveLength(214);
    expect(ends(chunks).slice(0, 10)).toEqual([5338, 11358, 16892, 22217, 29041, 33656, 40692, 44922, 45983, 49893]);
    expect(chunks.at(-1)).toEqual({ offset: 1048114, size: 462 });
    const atDefaults = chunkBytes(pseudoRandom(8, 16 * MiB), DEFAULT_CHUNKER_PARAMS, { implementation });
    expect(ends(atDefaults)).toEqual([
      1139530, 2743944, 3316885, 4150262, 6362017, 6773352, 7647132, 8861279, 9153313, 10873496, 13113774, 14745779, 16777216,
    ]);
    // Same input, same cuts.
    expect(chunkBytes(data, SMALL, { implementation })).toEqual(chunks);
  });

  it('keeps every chunk but the last within (minSize, maxSize], also on low-entropy data', () => {
    // Random data, then 200 KiB of zeros (a constant hash: cuts only at maxSize or right after
    // minSize), then a repeating 7-byte pattern, then random again.
    const pattern = Buffer.alloc(100 * KiB);
    for (let i = 0; i < pattern.length; i++) pattern[i] = (i % 7) * 37;
    const data = Buffer.concat([pseudoRandom(1, 300 * KiB), Buffer.alloc(200 * KiB), pattern, pseudoRandom(2, 300 * KiB + 123)]);
    for (const implementation of IMPLEMENTATIONS) {
      const chunks = chunkBytes(data, SMALL, { implementation });
      expect(chunks.reduce((sum, c) => sum + c.size, 0)).toBe(data.length);
      chunks.forEach((c, i) => {
        expect(c.offset).toBe(i === 0 ? 0 : chunks[i - 1]!.offset + chunks[i - 1]!.size);
        expect(c.size).toBeLessThanOrEqual(SMALL.maxSize);
        if (i < chunks.length - 1) expect(c.size).toBeGreaterThan(SMALL.minSize);
      });
      expect(chunks.some((c) => c.size === SMALL.maxSize)).toBe(true);
    }
    expect(chunkBytes(Buffer.alloc(0), SMALL)).toEqual([]);
    expect(chunkBytes(Buffer.alloc(10), SMALL)).toEqual([{ offset: 0, size: 10 }]);
  });

  it('averages close to avgSize on random data', () => {
    // Simulated mean: 1.17x avgSize (minimum-size skipping adds to the mean).
    for (const [params, size] of [
      [MEDIUM, 16 * MiB],
      [DEFAULT_CHUNKER_PARAMS, 64 * MiB],
    ] as const) {
      const chunks = chunkBytes(pseudoRandom(3, size), params);
      const mean = size / chunks.length;
      expect(mean, JSON.stringify(params)).toBeGreaterThan(params.avgSize * 0.8);
      expect(mean, JSON.stringify(params)).toBeLessThan(params.avgSize * 1.5);
    }
  });

  it.each(IMPLEMENTATIONS)('%s: cuts identically whatever the buffer splits', (implementation) => {
    const data = Buffer.concat([pseudoRandom(4, 3 * MiB), Buffer.alloc(40 * KiB, 0xaa), pseudoRandom(5, 3 * MiB + 17)]);
    for (const params of [SMALL, MEDIUM]) {
      const whole = ends(chunkBytes(data, params, { implementation: 'js' }));
      expect(whole.length).toBeGreaterThan(data.length / (params.avgSize * 2));
      expect(ends(chunkBytes(data, params, { implementation: 'native' }))).toEqual(whole);
      // Pieces from 0 bytes to well past maxSize, and tiny ones around the skip and normalization points.
      expect(endsWithSplits(data, params, implementation, 11, 3 * params.maxSize)).toEqual(whole);
      if (params === SMALL) expect(endsWithSplits(data, params, implementation, 12, 97)).toEqual(whole);
    }
  });
});

describe('edit locality', () => {
  it.each(IMPLEMENTATIONS)('%s: a 1-byte insert near the start and an avgSize overwrite in the middle add <= 3 chunks', (implementation) => {
    const data = pseudoRandom(6, 8 * MiB);
    const inserted = newChunks(data, insertByte(data, 100, 0x42), MEDIUM, implementation);
    expect(inserted.count).toBeGreaterThanOrEqual(1);
    expect(inserted.count).toBeLessThanOrEqual(3);
    const overwritten = newChunks(data, overwrite(data, 4 * MiB, pseudoRandom(99, MEDIUM.avgSize)), MEDIUM, implementation);
    expect(overwritten.count).toBeGreaterThanOrEqual(1);
    expect(overwritten.count).toBeLessThanOrEqual(3);
  });

  it('rewrites <= 3 chunks for most avgSize overwrites (the resynchronisation the parameters were chosen for)', () => {
    // 40 overwrites of avgSize bytes at pseudo-random offsets. Simulated with 1,000 edits, 94% add <= 3
    // chunks (chunker-params.ts); a regression in how the chunking rejoins after an edit shows here.
    const data = pseudoRandom(12, 2 * MiB);
    const next = prng(13);
    const counts: number[] = [];
    for (let trial = 0; trial < 40; trial++) {
      const at = 512 * KiB + (next() % MiB);
      counts.push(newChunks(data, overwrite(data, at, pseudoRandom(1000 + trial, MEDIUM.avgSize)), MEDIUM).count);
    }
    expect(Math.min(...counts)).toBeGreaterThanOrEqual(1);
    expect(counts.filter((count) => count <= 3).length, counts.join(' ')).toBeGreaterThanOrEqual(34);
    expect(Math.max(...counts), counts.join(' ')).toBeLessThanOrEqual(6);
  });

  it('at the defaults on 64 MiB: a 1-byte insert and a 1 MiB overwrite each add <= 3 chunks', () => {
    const data = pseudoRandom(9, 64 * MiB);
    const inserted = newChunks(data, insertByte(data, 1000, 0x42), DEFAULT_CHUNKER_PARAMS);
    expect(inserted.count).toBeGreaterThanOrEqual(1);
    expect(inserted.count).toBeLessThanOrEqual(3);
    expect(inserted.bytes).toBeLessThan(3 * DEFAULT_CHUNKER_PARAMS.maxSize);
    const overwritten = newChunks(data, overwrite(data, 32 * MiB, pseudoRandom(98, MiB)), DEFAULT_CHUNKER_PARAMS);
    expect(overwritten.count).toBeGreaterThanOrEqual(1);
    expect(overwritten.count).toBeLessThanOrEqual(3);
    expect(overwritten.bytes).toBeGreaterThanOrEqual(MiB);
  });
});

describe('chunkFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-chunker-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each(IMPLEMENTATIONS)('%s: matches the in-memory chunks, with BLAKE3 per chunk and for the whole file', async (implementation) => {
    const data = Buffer.concat([pseudoRandom(10, 20 * MiB), Buffer.alloc(5 * MiB), pseudoRandom(11, 3 * MiB + 5)]);
    const file = join(dir, `data-${implementation}.bin`);
    writeFileSync(file, data);
    const expected = chunkBytes(data, DEFAULT_CHUNKER_PARAMS).map((c) => ({
      ...c,
      hash: hashBuffer(data.subarray(c.offset, c.offset + c.size)),
    }));
    expect(expected.length).toBeGreaterThan(10);
    // An odd block size, so chunks and blocks never line up.
    for (const blockBytes of [undefined, 65_537]) {
      const result = await chunkFile(file, DEFAULT_CHUNKER_PARAMS, { implementation, ...(blockBytes === undefined ? {} : { blockBytes }) });
      expect(result.implementation).toBe(implementation);
      expect(result.params).toEqual(DEFAULT_CHUNKER_PARAMS);
      expect(result.size).toBe(data.length);
      expect(result.hash).toBe(hashBuffer(data));
      expect(result.chunks).toEqual(expected);
    }
  });

  it('handles an empty file, a missing file and bad arguments', async () => {
    const empty = join(dir, 'empty.bin');
    writeFileSync(empty, '');
    const result = await chunkFile(empty, SMALL);
    expect(result).toEqual({ params: SMALL, chunks: [], hash: hashBuffer(Buffer.alloc(0)), size: 0, implementation: 'native', packBytes: 0 });
    await expect(chunkFile(join(dir, 'missing.bin'), SMALL)).rejects.toMatchObject({ code: 'ENOENT', syscall: 'open' });
    await expect(chunkFile(empty, { ...SMALL, avgSize: 5000 })).rejects.toThrow(TypeError);
    await expect(chunkFile(empty, SMALL, { blockBytes: 100 })).rejects.toThrow(/blockBytes/);
  });
});
