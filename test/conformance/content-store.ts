// The ContentStore conformance suite (engine/ports/content-store.ts). Every backend runs it:
//   contentStoreConformance('local', async () => ({ store, cleanup }))
// Each test opens a fresh, empty store. Sizes straddle 64 KiB, where a backend is likely to switch
// between a small-object and a large-object path.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ContentStore } from '../../engine/ports/content-store.js';
import type { ContentHash } from '../../engine/types.js';
import {
  BAD_HASHES,
  bigBytes,
  bytes,
  chunked,
  collect,
  expectStrataError,
  listAll,
  type StoreOpener,
  sleep,
} from './content-store-fixtures.js';
import { contentStoreConcurrencyConformance } from './content-store-concurrency.js';

const EMPTY: ContentHash = 'blake3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262';
const ABC: ContentHash = 'blake3:6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85';
const KIB = 1024;

export function contentStoreConformance(name: string, open: StoreOpener): void {
  describe(`ContentStore conformance: ${name}`, () => {
    let store: ContentStore;
    let cleanup: () => Promise<void>;
    let scratch: string;
    const getStore = () => store;

    beforeEach(async () => {
      ({ store, cleanup } = await open());
      scratch = await mkdtemp(join(tmpdir(), 'strata-cs-input-'));
    });
    afterEach(async () => {
      await cleanup();
      await rm(scratch, { recursive: true, force: true });
    });

    it('hashes to the BLAKE3 test vectors', async () => {
      expect(await store.putBuffer(new Uint8Array(0))).toEqual({ hash: EMPTY, size: 0, created: true });
      expect(await store.putBuffer(Buffer.from('abc'))).toEqual({ hash: ABC, size: 3, created: true });
      expect(await store.readBuffer(EMPTY)).toEqual(Buffer.alloc(0));
      expect((await store.readBuffer(ABC)).toString()).toBe('abc');
      expect(await collect(await store.open(EMPTY))).toEqual(Buffer.alloc(0));
    });

    for (const size of [1, 4 * KIB, 64 * KIB - 1, 64 * KIB, 64 * KIB + 1, 5_000_000]) {
      it(`round-trips ${size} bytes through put, putBuffer and putFile`, async () => {
        const data = bigBytes(size, size);
        const viaStream = await store.put(chunked(data, 7_919));
        expect(viaStream).toMatchObject({ size, created: true });
        expect(await store.putBuffer(data)).toEqual({ ...viaStream, created: false });
        const file = join(scratch, 'input.bin');
        await writeFile(file, data);
        expect(await store.putFile(file)).toEqual({ ...viaStream, created: false });
        expect(await collect(await store.open(viaStream.hash))).toEqual(data);
        expect(await store.has(viaStream.hash)).toBe(true);
        expect(await store.stat(viaStream.hash)).toMatchObject({ hash: viaStream.hash, size });
        expect(await store.verify(viaStream.hash)).toBe('ok');
        if (size <= 64 * KIB + 1) expect(await store.readBuffer(viaStream.hash)).toEqual(data);
      });
    }

    it('serves inclusive byte ranges and clamps the end to the object', async () => {
      for (const size of [10 * KIB, 3_000_000]) {
        const data = bigBytes(size, 7);
        const { hash } = await store.putBuffer(data);
        const cases: [number, number][] = [
          [0, 0],
          [0, size - 1],
          [1, 100],
          [size - 1, size - 1],
          [size - 10, size + 1000],
        ];
        for (const [start, end] of cases) {
          const got = await collect(await store.open(hash, { start, end }));
          expect(got, `${size}: ${start}-${end}`).toEqual(data.subarray(start, Math.min(end, size - 1) + 1));
        }
        for (const range of [
          { start: size, end: size + 5 },
          { start: 5, end: 4 },
          { start: -1, end: 3 },
          { start: 1.5, end: 3 },
        ]) {
          await expectStrataError(store.open(hash, range), 'INVALID_ARGUMENT', /range/);
        }
      }
    });

    it('stores many contents in one putBuffers call, results in order, each as putBuffer would', async () => {
      const a = bytes(1000, 1);
      const b = bytes(0, 2);
      const large = bigBytes(200 * KIB, 3);
      const c = bytes(4000, 4);
      const alone = await store.putBuffer(c);
      const results = await store.putBuffers([a, large, b, a.subarray(0), c]);
      expect(results.map((r) => r.size)).toEqual([1000, 200 * KIB, 0, 1000, 4000]);
      expect(results.map((r) => r.created)).toEqual([true, true, true, false, false]);
      expect(results[4]!.hash).toBe(alone.hash);
      expect(results[3]!.hash).toBe(results[0]!.hash);
      for (const [i, data] of [a, large, b, a, c].entries()) {
        expect(results[i]!.hash).toBe((await store.put(chunked(data, 997))).hash);
        expect(await collect(await store.open(results[i]!.hash))).toEqual(data);
      }
      expect(await store.putBuffers([])).toEqual([]);
    });

    it('deduplicates: a second put stores nothing new and refreshes touchedAtMs', async () => {
      for (const data of [bytes(1000, 1), bigBytes(300 * KIB, 2)]) {
        const first = await store.putBuffer(data);
        const before = await store.stat(first.hash);
        await sleep(25);
        const second = await store.put(chunked(data, 4096));
        expect(second).toEqual({ ...first, created: false });
        const after = await store.stat(first.hash);
        expect(after!.touchedAtMs).toBeGreaterThan(before!.touchedAtMs);
      }
      expect((await listAll(store)).size).toBe(2);
    });

    it('reports absent objects as missing, and CONTENT_NOT_FOUND when read', async () => {
      expect(await store.has(ABC)).toBe(false);
      expect(await store.stat(ABC)).toBeNull();
      expect(await store.verify(ABC)).toBe('missing');
      await expectStrataError(store.open(ABC), 'CONTENT_NOT_FOUND');
      await expectStrataError(store.open(ABC, { start: 0, end: 1 }), 'CONTENT_NOT_FOUND');
      await expectStrataError(store.readBuffer(ABC), 'CONTENT_NOT_FOUND');
      await store.delete(ABC); // deleting what is not there is not an error
    });

    it('refuses malformed hashes with INVALID_ARGUMENT', async () => {
      for (const bad of BAD_HASHES) {
        const hash = bad as ContentHash;
        await expectStrataError(store.has(hash), 'INVALID_ARGUMENT', /blake3/);
        await expectStrataError(store.stat(hash), 'INVALID_ARGUMENT');
        await expectStrataError(store.open(hash), 'INVALID_ARGUMENT');
        await expectStrataError(store.readBuffer(hash), 'INVALID_ARGUMENT');
        await expectStrataError(store.verify(hash), 'INVALID_ARGUMENT');
        await expectStrataError(store.delete(hash), 'INVALID_ARGUMENT');
        await expectStrataError(store.putBuffer(Buffer.from('x'), { expectedHash: hash }), 'INVALID_ARGUMENT');
      }
    });

    it('rejects more than maxBytes with BODY_TOO_LARGE and stores nothing', async () => {
      const small = bytes(2000, 3);
      const large = bigBytes(3_000_000, 4);
      const file = join(scratch, 'large.bin');
      await writeFile(file, large);
      await expectStrataError(store.put(chunked(small, 100), { maxBytes: 1999 }), 'BODY_TOO_LARGE', /1999/);
      await expectStrataError(store.putBuffer(small, { maxBytes: 10 }), 'BODY_TOO_LARGE');
      await expectStrataError(store.put(chunked(large, 65_536), { maxBytes: 2_000_000 }), 'BODY_TOO_LARGE');
      await expectStrataError(store.putBuffer(large, { maxBytes: 2_999_999 }), 'BODY_TOO_LARGE');
      await expectStrataError(store.putFile(file, { maxBytes: 1_000_000 }), 'BODY_TOO_LARGE');
      expect((await listAll(store)).size).toBe(0);
      // exactly maxBytes is allowed
      expect(await store.put(chunked(small, 100), { maxBytes: 2000 })).toMatchObject({ size: 2000 });
      expect(await store.putFile(file, { maxBytes: 3_000_000 })).toMatchObject({ size: 3_000_000 });
    });

    it('rejects content that does not match expectedHash with CONTENT_CORRUPT and stores nothing', async () => {
      for (const data of [bytes(100, 5), bigBytes(2_000_000, 6)]) {
        await expectStrataError(store.putBuffer(data, { expectedHash: ABC }), 'CONTENT_CORRUPT', /expected/);
        await expectStrataError(store.put(chunked(data, 50_000), { expectedHash: ABC }), 'CONTENT_CORRUPT');
        const file = join(scratch, 'mismatch.bin');
        await writeFile(file, data);
        await expectStrataError(store.putFile(file, { expectedHash: EMPTY }), 'CONTENT_CORRUPT');
      }
      expect((await listAll(store)).size).toBe(0);
      const good = await store.putBuffer(Buffer.from('abc'), { expectedHash: ABC });
      expect(good.hash).toBe(ABC);
    });

    it('rejects with the source error when the source fails, storing nothing', async () => {
      for (const before of [bytes(10, 1), bigBytes(2_500_000, 2)]) {
        const boom = new Error(`source failed after ${before.length} bytes`);
        async function* failing(): AsyncGenerator<Uint8Array> {
          yield* chunked(before, 100_000);
          throw boom;
        }
        await expect(store.put(failing())).rejects.toBe(boom);
      }
      expect((await listAll(store)).size).toBe(0);
    });

    it('reports progress as a running byte total', async () => {
      const seen: number[] = [];
      await store.put(chunked(bytes(5000, 9), 1000), { onProgress: (n) => seen.push(n) });
      expect(seen.at(-1)).toBe(5000);
      expect(seen).toEqual([...seen].sort((a, b) => a - b));
      const fileSeen: number[] = [];
      const file = join(scratch, 'progress.bin');
      await writeFile(file, bigBytes(3_000_000, 10));
      await store.putFile(file, { onProgress: (n) => fileSeen.push(n) });
      expect(fileSeen.at(-1)).toBe(3_000_000);
    });

    it('keeps the errno of an unreadable putFile source', async () => {
      await expect(store.putFile(join(scratch, 'absent.bin'))).rejects.toMatchObject({ code: 'ENOENT' });
      await expect(store.putFile(scratch)).rejects.toMatchObject({ code: 'EISDIR' });
      expect((await listAll(store)).size).toBe(0);
    });

    it('lists every object once and deletes', async () => {
      const stored = await Promise.all([
        store.putBuffer(bytes(10, 1)),
        store.putBuffer(bytes(64 * KIB + 1, 2)),
        store.putBuffer(bigBytes(2_000_000, 3)),
      ]);
      const listed = await listAll(store);
      expect(listed).toEqual(new Map(stored.map((r) => [r.hash, r.size])));
      for await (const info of store.list()) expect(info.touchedAtMs).toBeGreaterThan(0);
      for (const { hash } of stored) {
        await store.delete(hash);
        expect(await store.has(hash)).toBe(false);
        await expectStrataError(store.open(hash), 'CONTENT_NOT_FOUND');
      }
      expect((await listAll(store)).size).toBe(0);
    });

    contentStoreConcurrencyConformance(getStore);
  });
}
