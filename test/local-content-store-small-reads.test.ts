// putFile of small files reads each into a reused buffer and keeps a copy at the content's own size
// (local-content-store-ingest.ts): a new 64 KiB buffer per file was 320 MiB allocated for a first
// sync's 5,000 small files, which V8 counts toward the daemon's heap limit (issue 38). Files stored
// at once must still each get their own bytes. A file the caller already has open (the capture's) is
// read through that handle, without a second open and close per file.
import { randomBytes } from 'node:crypto';
import { open, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ContentStore } from '../engine/engine-api.js';
import { hashBuffer } from '../engine/hash.js';
import { createLocalContentStore } from '../engine/storage/local-content-store.js';
import { bufferBytesAllocatedDuring } from './helpers/buffer-allocations.js';
import { tempDir } from './helpers/world.js';

const KIB = 1024;

describe('small files put through reused read buffers', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let store: ContentStore;
  const files: Array<{ path: string; bytes: Buffer }> = [];

  beforeEach(async () => {
    dir = await tempDir('strata-small-reads-');
    store = await createLocalContentStore({ root: join(dir.path, 'store') });
    files.length = 0;
    for (let i = 0; i < 200; i++) {
      const bytes = randomBytes(1 * KIB + ((i * 7919) % (19 * KIB)));
      const path = join(dir.path, `f${i}.dat`);
      await writeFile(path, bytes);
      files.push({ path, bytes });
    }
  });

  afterEach(async () => {
    await store.close();
    await dir.cleanup();
  });

  it('stores each of many files put at once with its own bytes', async () => {
    const results = await Promise.all(files.map((file) => store.putFile(file.path)));
    for (const [i, result] of results.entries()) {
      expect(result.hash).toBe(hashBuffer(files[i]!.bytes));
      expect((await store.readBuffer(result.hash)).equals(files[i]!.bytes)).toBe(true);
    }
  });

  it('allocates a few read buffers for 200 files, not one each', async () => {
    const allocated = await bufferBytesAllocatedDuring(async () => {
      for (let i = 0; i < files.length; i += 4) await Promise.all(files.slice(i, i + 4).map((file) => store.putFile(file.path)));
    });
    // One 64 KiB buffer per file was 12.5 MiB for these 200; the kept ones are at most 8 × 64 KiB.
    expect(allocated).toBeLessThan(1024 * KIB);
  });

  it("reads a small file through the caller's open handle, at its offsets, and leaves the handle open", async () => {
    const file = files[7]!;
    const handle = await open(file.path, 'r');
    try {
      // Read from the handle, not the path: the name is gone, and the handle's position is not at 0.
      await unlink(file.path);
      await handle.read(Buffer.alloc(10), 0, 10, null);
      const result = await store.putFile(file.path, { handle });
      expect(result.hash).toBe(hashBuffer(file.bytes));
      expect((await store.readBuffer(result.hash)).equals(file.bytes)).toBe(true);
      // Still the caller's: readable again.
      expect((await handle.stat()).size).toBe(file.bytes.length);
      await store.putFile(file.path, { handle });
    } finally {
      await handle.close();
    }
  });
});
