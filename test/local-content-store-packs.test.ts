// Dataset shards in pack files (engine/storage/local-content-store-shard-packs.ts): one pack per
// ingest, reads and verification by span, deletes that empty a pack remove it, compaction of a mostly
// dead pack, and leftovers of a crashed writer.
import { randomUUID } from 'node:crypto';
import { mkdtemp, open, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chunkerParams } from '../engine/datasets/chunker-params.js';
import { hashBuffer } from '../engine/hash.js';
import type { ContentStore, DatasetIngest } from '../engine/ports/content-store.js';
import { createLocalContentStore } from '../engine/storage/local-content-store.js';
import type { ContentHash } from '../engine/types.js';
import { bytes, collect, expectStrataError, listAll, streamError } from './conformance/content-store-fixtures.js';

/** Small shards (128 KiB–1 MiB), all above the 64 KiB SQLite-pack limit, so every one goes to a pack. */
const PARAMS = chunkerParams({ minSize: 128 * 1024, avgSize: 256 * 1024, maxSize: 1024 * 1024 });

describe('local content store: shard packs', () => {
  let root: string;
  let store: ContentStore;
  const packsDir = () => join(root, 'objects', 'packs');
  const packFiles = async () => (await readdir(packsDir())).sort();
  const looseFiles = async () => {
    let n = 0;
    for (const dir of await readdir(join(root, 'objects'))) if (/^[0-9a-f]{2}$/.test(dir)) n += (await readdir(join(root, 'objects', dir))).length;
    return n;
  };
  const ingest = async (name: string, data: Buffer): Promise<DatasetIngest> => {
    const file = join(root, name);
    await writeFile(file, data);
    return store.putDatasetFile!(file, PARAMS);
  };
  const distinct = (ingest: DatasetIngest) => new Set(ingest.shards.map((s) => s.hash));

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-packs-'));
    store = await createLocalContentStore({ root });
  });
  afterEach(async () => {
    await store.close();
    await rm(root, { recursive: true, force: true });
  });

  it('writes the new shards of one ingest into one pack and reads each back whole, by range and in batches', async () => {
    const data = bytes(6 * 1024 * 1024, 31);
    const result = await ingest('a.bin', data);
    expect(result.shards.length).toBeGreaterThanOrEqual(16);
    expect(result.newShards).toBe(distinct(result).size);
    expect(await packFiles()).toHaveLength(1);
    expect(await looseFiles()).toBe(0);
    expect((await stat(join(packsDir(), (await packFiles())[0]!))).size).toBe(data.length);
    expect(await readdir(join(root, 'tmp'))).toEqual([]);

    let offset = 0;
    for (const shard of result.shards) {
      const expected = data.subarray(offset, offset + shard.size);
      expect((await store.stat(shard.hash))?.size).toBe(shard.size);
      expect((await collect(await store.open(shard.hash))).equals(expected)).toBe(true);
      expect((await collect(await store.open(shard.hash, { start: 10, end: 5000 }))).equals(expected.subarray(10, 5001))).toBe(true);
      expect((await store.readBuffer(shard.hash)).equals(expected)).toBe(true);
      expect(await store.verify(shard.hash)).toBe('ok');
      expect(await store.objectFile!(shard.hash)).toBeNull();
      // the mount reads a shard by its span of the pack file
      const span = (await store.objectSpan!(shard.hash))!;
      expect(span).toMatchObject({ offset, size: shard.size });
      const handle = await open(span.file, 'r');
      try {
        const got = Buffer.alloc(shard.size);
        await handle.read(got, 0, shard.size, span.offset);
        expect(got.equals(expected)).toBe(true);
      } finally {
        await handle.close();
      }
      offset += shard.size;
    }
    // all the shards' spans in one lookup, in order; a missing object is null
    const spans = await store.objectSpans!([...result.shards.map((s) => s.hash), `blake3:${'0'.repeat(64)}` as ContentHash]);
    expect(spans.slice(0, -1)).toEqual(await Promise.all(result.shards.map((s) => store.objectSpan!(s.hash))));
    expect(spans.at(-1)).toBeNull();
    // 16 or more at once go through the batch reader thread
    const batch = await store.readBuffers!(result.shards.map((s) => s.hash));
    offset = 0;
    for (const shard of result.shards) {
      expect(batch.get(shard.hash)!.equals(data.subarray(offset, offset + shard.size))).toBe(true);
      offset += shard.size;
    }
    const listed = await listAll(store);
    expect(new Set(listed.keys())).toEqual(distinct(result));

    // the same file again stores nothing and writes no pack
    const again = await ingest('a-again.bin', data);
    expect(again.newShards).toBe(0);
    expect(await packFiles()).toHaveLength(1);
    expect(await readdir(join(root, 'tmp'))).toEqual([]);
  });

  it('catches a damaged shard on read and verify; the other shards of its pack stay good', async () => {
    const data = bytes(3 * 1024 * 1024, 32);
    const result = await ingest('b.bin', data);
    const [pack] = await packFiles();
    const damagedAt = result.shards[0]!.size + 100; // inside the second shard
    const handle = await open(join(packsDir(), pack!), 'r+');
    try {
      await handle.write(Buffer.from([data[damagedAt]! ^ 0xff]), 0, 1, damagedAt);
    } finally {
      await handle.close();
    }
    const damaged = result.shards[1]!.hash;
    expect(await store.verify(damaged)).toBe('corrupt');
    await expectStrataError(store.readBuffer(damaged), 'CONTENT_CORRUPT');
    expect(await streamError(await store.open(damaged))).toMatchObject({ code: 'CONTENT_CORRUPT' });
    expect(await store.verify(result.shards[0]!.hash)).toBe('ok');
    expect(await store.verify(result.shards[2]!.hash)).toBe('ok');
  });

  it('a pack file removed behind the store\'s back makes its shards missing, not a crash', async () => {
    const result = await ingest('lost.bin', bytes(2 * 1024 * 1024, 39));
    await rm(join(packsDir(), (await packFiles())[0]!), { force: true });
    const hash = result.shards[0]!.hash;
    expect(await store.verify(hash)).toBe('missing');
    await expectStrataError(store.readBuffer(hash), 'CONTENT_NOT_FOUND');
    await expectStrataError(store.open(hash), 'CONTENT_NOT_FOUND');
  });

  it('removes a pack once every shard in it is deleted', async () => {
    const result = await ingest('c.bin', bytes(2 * 1024 * 1024, 33));
    const hashes = [...distinct(result)];
    for (const hash of hashes.slice(0, -1)) await store.delete(hash);
    expect(await packFiles()).toHaveLength(1);
    await store.delete(hashes.at(-1)!);
    expect(await packFiles()).toEqual([]);
    expect((await listAll(store)).size).toBe(0);
    await expectStrataError(store.readBuffer(hashes[0]!), 'CONTENT_NOT_FOUND');
  });

  it('compacts a pack whose dead bytes outweigh the live ones; the live shards stay readable', async () => {
    // B is a prefix of A: B's shards are A's first ones (all but B's last, which ends where B does).
    const a = bytes(12 * 1024 * 1024, 34);
    const b = a.subarray(0, 3 * 1024 * 1024);
    const first = await ingest('a.bin', a);
    const second = await ingest('b.bin', b);
    expect(second.newShards).toBeLessThanOrEqual(1);
    const [packOfA] = await packFiles();
    const keep = distinct(second);
    for (const hash of distinct(first)) if (!keep.has(hash)) await store.delete(hash);
    const freed = await store.compact!();
    expect(freed.bytesFreed).toBeGreaterThan(8 * 1024 * 1024);
    const packs = await packFiles();
    expect(packs).not.toContain(packOfA);
    let total = 0;
    for (const pack of packs) total += (await stat(join(packsDir(), pack))).size;
    expect(total).toBeLessThan(4 * 1024 * 1024);
    let offset = 0;
    for (const shard of second.shards) {
      expect((await store.readBuffer(shard.hash)).equals(b.subarray(offset, offset + shard.size))).toBe(true);
      expect(await store.verify(shard.hash)).toBe('ok');
      offset += shard.size;
    }
    // nothing left to do the second time
    expect((await store.compact!()).bytesFreed).toBe(0);
  });

  it('a reader that located a shard before compaction moved it still gets its bytes', async () => {
    const a = bytes(12 * 1024 * 1024, 35);
    const first = await ingest('a.bin', a);
    const keep: ContentHash = first.shards[0]!.hash;
    for (const hash of distinct(first)) if (hash !== keep) await store.delete(hash);
    const reads = Array.from({ length: 20 }, () => store.readBuffer(keep));
    await store.compact!();
    for (const read of await Promise.all(reads)) expect(hashBuffer(read)).toBe(keep);
    expect(hashBuffer(await store.readBuffer(keep))).toBe(keep);
  });

  it('cuts a stream as it arrives: every new chunk into one pack, the same shards as the file, nothing left on failure', async () => {
    const data = Buffer.concat([bytes(5 * 1024 * 1024, 37), bytes(1000, 38)]);
    async function* pieces(upTo = data.length, fail = false) {
      for (let i = 0; i < upTo; i += 65_536) yield data.subarray(i, Math.min(i + 65_536, upTo));
      if (fail) throw new Error('the client went away');
    }
    // a failing source and an oversized one store nothing and leave no temp file or pack
    await expect(store.putDatasetStream!(pieces(3 * 1024 * 1024, true), PARAMS)).rejects.toThrow('the client went away');
    await expectStrataError(store.putDatasetStream!(pieces(), PARAMS, { maxBytes: 4 * 1024 * 1024 }), 'BODY_TOO_LARGE');
    expect(await packFiles()).toEqual([]);
    expect(await readdir(join(root, 'tmp'))).toEqual([]);
    expect((await listAll(store)).size).toBe(0);

    const streamed = await store.putDatasetStream!(pieces(), PARAMS);
    expect(streamed.hash).toBe(hashBuffer(data));
    expect(streamed.size).toBe(data.length);
    expect(streamed.newShards).toBe(distinct(streamed).size);
    expect(await packFiles()).toHaveLength(1);
    let offset = 0;
    for (const shard of streamed.shards) {
      expect((await store.readBuffer(shard.hash)).equals(data.subarray(offset, offset + shard.size))).toBe(true);
      offset += shard.size;
    }
    // the same bytes as a file: the same shards, all already stored
    const fromFile = await ingest('e.bin', data);
    expect(fromFile.shards).toEqual(streamed.shards);
    expect(fromFile.newShards).toBe(0);
    expect(await readdir(join(root, 'tmp'))).toEqual([]);
  });

  it("cuts a stream that must be a known manifest at that manifest's shards: the manifest's hash when every piece matches, another when one does not", async () => {
    const data = Buffer.concat([bytes(5 * 1024 * 1024, 41), bytes(777, 42)]);
    // The manifest's shards come from the other side (here: another store), where the cut search made them.
    const otherRoot = await mkdtemp(join(tmpdir(), 'strata-packs-other-'));
    const other = await createLocalContentStore({ root: otherRoot });
    let made: DatasetIngest;
    try {
      await writeFile(join(otherRoot, 'src.bin'), data);
      made = await other.putDatasetFile!(join(otherRoot, 'src.bin'), PARAMS);
    } finally {
      await other.close();
      await rm(otherRoot, { recursive: true, force: true });
    }
    const expectManifest = { hash: made.hash, shards: made.shards };
    async function* pieces(of: Buffer) {
      // odd piece sizes: cuts fall inside pieces and on their edges
      for (let i = 0; i < of.length; i += 65_537) yield of.subarray(i, Math.min(i + 65_537, of.length));
    }
    // one byte changed in the third shard: the first two are kept, the result is not the manifest
    const tampered = Buffer.from(data);
    const third = made.shards[0]!.size + made.shards[1]!.size + 10;
    tampered[third] = tampered[third]! ^ 0xff;
    const bad = await store.putDatasetStream!(pieces(tampered), PARAMS, { expect: expectManifest });
    expect(bad.hash).not.toBe(made.hash);
    expect(bad.shards.slice(0, 2)).toEqual(made.shards.slice(0, 2));
    expect(await store.has(made.shards[0]!.hash)).toBe(true);
    expect(await store.has(made.shards[2]!.hash)).toBe(false);
    // cut short, or longer than the manifest: not the manifest either
    expect((await store.putDatasetStream!(pieces(data.subarray(0, data.length - 1)), PARAMS, { expect: expectManifest })).hash).not.toBe(made.hash);
    expect((await store.putDatasetStream!(pieces(Buffer.concat([data, bytes(5, 43)])), PARAMS, { expect: expectManifest })).hash).not.toBe(made.hash);
    // the right bytes: the manifest's hash and shards, each stored and readable
    const good = await store.putDatasetStream!(pieces(data), PARAMS, { expect: expectManifest });
    expect(good.hash).toBe(made.hash);
    expect(good.shards).toEqual(made.shards);
    let offset = 0;
    for (const shard of good.shards) {
      expect((await store.readBuffer(shard.hash)).equals(data.subarray(offset, offset + shard.size))).toBe(true);
      offset += shard.size;
    }
    expect(await readdir(join(root, 'tmp'))).toEqual([]);
    // Cut where the manifest says, not where the cut search would: fixed 300 KiB pieces come back as those pieces.
    const fixed: Array<{ hash: ContentHash; size: number }> = [];
    for (let at = 0; at < data.length; at += 300 * 1024) {
      const piece = data.subarray(at, Math.min(at + 300 * 1024, data.length));
      fixed.push({ hash: hashBuffer(piece), size: piece.length });
    }
    const cutAsTold = await store.putDatasetStream!(pieces(data), PARAMS, { expect: { hash: made.hash, shards: fixed } });
    expect(cutAsTold.shards).toEqual(fixed);
    expect(cutAsTold.hash).toBe(made.hash);
  });

  it('at open, removes packs no row names whose writer is gone, and keeps indexed ones', async () => {
    const result = await ingest('d.bin', bytes(1024 * 1024, 36));
    const orphan = `2147483646-${randomUUID()}.pack`; // no such pid
    await writeFile(join(packsDir(), orphan), bytes(4096, 1));
    await store.close();
    store = await createLocalContentStore({ root });
    const packs = await packFiles();
    expect(packs).toHaveLength(1);
    expect(packs).not.toContain(orphan);
    for (const hash of distinct(result)) expect(await store.verify(hash)).toBe('ok');
  });
});
