// store.writeObjectsTo: a working-tree file made from stored objects on a chunking thread (what a
// pulled dataset is brought to disk with), each object checked against its hash on the way.
import { mkdtemp, open, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chunkerParams } from '../engine/datasets/chunker-params.js';
import type { ContentStore } from '../engine/ports/content-store.js';
import { createLocalContentStore } from '../engine/storage/local-content-store.js';
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

  it('answers false, writing nothing, when an object is not kept in a file (a small packed one)', async () => {
    const small = await store.putBuffer(Buffer.from('small content'));
    const out = join(root, 'small.bin');
    expect(await store.writeObjectsTo!([{ hash: small.hash, size: small.size }], out, 0o644)).toBe(false);
    await expect(stat(out)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
