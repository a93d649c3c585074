// store.writeObjectsTo: a working-tree file made from stored objects on a chunking thread (what a
// pulled dataset is brought to disk with), each object checked against its hash on the way.
import { mkdtemp, open, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chunkerParams } from '../engine/datasets/chunker-params.js';
import type { ContentStore } from '../engine/ports/content-store.js';
import { createLocalContentStore } from '../engine/storage/local-content-store.js';
import type { ContentHash } from '../engine/types.js';
import { bytes, expectStrataError } from './conformance/content-store-fixtures.js';

const PARAMS = chunkerParams({ minSize: 128 * 1024, avgSize: 256 * 1024, maxSize: 1024 * 1024 });

describe('local content store: writeObjectsTo', () => {
  let root: string;
  let store: ContentStore;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-write-objects-'));
    store = await createLocalContentStore({ root });
  });
  afterEach(async () => {
    await store.close();
    await rm(root, { recursive: true, force: true });
  });

  it("writes a dataset's shards in order into a new file with the mode asked; a damaged shard leaves no file", async () => {
    const data = Buffer.concat([bytes(3 * 1024 * 1024, 51), bytes(4321, 52)]);
    await writeFile(join(root, 'src.bin'), data);
    const ingest = await store.putDatasetFile!(join(root, 'src.bin'), PARAMS);
    expect(ingest.shards.length).toBeGreaterThan(3);
    const out = join(root, 'out.bin');
    expect(await store.writeObjectsTo!(ingest.shards, out, 0o640)).toBe(true);
    expect((await readFile(out)).equals(data)).toBe(true);
    expect((await stat(out)).mode & 0o777).toBe(0o640 & ~process.umask());
    // the target must be new: an existing file is left as it was
    await expect(store.writeObjectsTo!(ingest.shards, out, 0o640)).rejects.toMatchObject({ code: 'EEXIST' });
    expect((await readFile(out)).equals(data)).toBe(true);

    // one byte of the second shard flipped where the store keeps it
    const packsDir = join(root, 'objects', 'packs');
    const [pack] = await readdir(packsDir);
    const handle = await open(join(packsDir, pack!), 'r+');
    try {
      const at = ingest.shards[0]!.size + 7;
      const one = Buffer.alloc(1);
      await handle.read(one, 0, 1, at);
      one[0] = one[0]! ^ 0xff;
      await handle.write(one, 0, 1, at);
    } finally {
      await handle.close();
    }
    const damaged = join(root, 'damaged.bin');
    await expectStrataError(store.writeObjectsTo!(ingest.shards, damaged, 0o644), 'CONTENT_CORRUPT');
    await expect(stat(damaged)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it("makes the file from the copy a pulled dataset's stream kept (keepCopy): the pack is not read again; no copy of bytes that were not the manifest's", async () => {
    const data = Buffer.concat([bytes(3 * 1024 * 1024, 61), bytes(999, 62)]);
    // The manifest's shards as the other side cut them (another store).
    const otherRoot = await mkdtemp(join(tmpdir(), 'strata-write-objects-other-'));
    const other = await createLocalContentStore({ root: otherRoot });
    let manifest: { hash: ContentHash; shards: Array<{ hash: ContentHash; size: number }> };
    try {
      await writeFile(join(otherRoot, 'src.bin'), data);
      const made = await other.putDatasetFile!(join(otherRoot, 'src.bin'), PARAMS);
      manifest = { hash: made.hash, shards: made.shards };
    } finally {
      await other.close();
      await rm(otherRoot, { recursive: true, force: true });
    }
    async function* pieces(of: Buffer) {
      for (let i = 0; i < of.length; i += 65_537) yield of.subarray(i, Math.min(i + 65_537, of.length));
    }
    // Bytes that are not the manifest's (one flipped): no copy is kept, the tmp directory is empty.
    const tampered = Buffer.from(data);
    tampered[10] = tampered[10]! ^ 0xff;
    expect((await store.putDatasetStream!(pieces(tampered), PARAMS, { expect: manifest, keepCopy: true })).hash).not.toBe(manifest.hash);
    expect(await readdir(join(root, 'tmp'))).toEqual([]);

    expect((await store.putDatasetStream!(pieces(data), PARAMS, { expect: manifest, keepCopy: true })).hash).toBe(manifest.hash);
    expect(await readdir(join(root, 'tmp'))).toHaveLength(1);
    // Damage the pack after the bytes were checked: the file comes from the kept copy, not from the
    // pack (assembled from it, this would be CONTENT_CORRUPT).
    const span = (await store.objectSpan!(manifest.shards[0]!.hash))!;
    const handle = await open(span.file, 'r+');
    try {
      await handle.write(Buffer.from([data[5]! ^ 0xff]), 0, 1, span.offset + 5);
    } finally {
      await handle.close();
    }
    const out = join(root, 'out.bin');
    expect(await store.writeObjectsTo!(manifest.shards, out, 0o777)).toBe(true);
    expect((await readFile(out)).equals(data)).toBe(true);
    // executable as asked, less the umask, as a new file made with that mode would be
    expect((await stat(out)).mode & 0o777).toBe(0o777 & ~process.umask());
    expect((await stat(out)).nlink).toBe(1);
    expect(await readdir(join(root, 'tmp'))).toEqual([]);
    // Taken once: the next file of the same shards is assembled from the (damaged) pack.
    await expectStrataError(store.writeObjectsTo!(manifest.shards, join(root, 'again.bin'), 0o644), 'CONTENT_CORRUPT');
  });

  it('answers false, writing nothing, when an object is not kept in a file (a small packed one)', async () => {
    const small = await store.putBuffer(Buffer.from('small content'));
    const out = join(root, 'small.bin');
    expect(await store.writeObjectsTo!([{ hash: small.hash, size: small.size }], out, 0o644)).toBe(false);
    await expect(stat(out)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
