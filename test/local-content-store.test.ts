import { access, mkdtemp, open, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chunkerParams } from '../engine/datasets/chunker-params.js';
import { StrataError } from '../engine/errors.js';
import { hashBuffer, isContentHash, parseContentHash } from '../engine/hash.js';
import type { ContentStore } from '../engine/ports/content-store.js';
import type { Clock } from '../engine/ports/world.js';
import { createLocalContentStore } from '../engine/storage/local-content-store.js';
import { DirectorySyncer } from '../engine/storage/local-content-store-dirsync.js';
import { PackObjects } from '../engine/storage/local-content-store-pack.js';
import type { ContentHash } from '../engine/types.js';
import { contentStoreConformance } from './conformance/content-store.js';
import { waitFor } from './daemon-harness.js';
import { BAD_HASHES, bigBytes, bytes, chunked, collect, expectStrataError, listAll, streamError } from './conformance/content-store-fixtures.js';

contentStoreConformance('local', async () => {
  const root = await mkdtemp(join(tmpdir(), 'strata-cs-'));
  const store = await createLocalContentStore({ root });
  return {
    store,
    cleanup: async () => {
      await store.close();
      await rm(root, { recursive: true, force: true });
    },
  };
});

describe('engine/hash', () => {
  it('hashes the BLAKE3 test vectors', () => {
    expect(hashBuffer(new Uint8Array(0))).toBe('blake3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262');
    expect(hashBuffer(Buffer.from('abc'))).toBe('blake3:6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85');
    // a view into a larger buffer hashes only its own bytes
    expect(hashBuffer(Buffer.from('xxabcxx').subarray(2, 5))).toBe(hashBuffer(Buffer.from('abc')));
  });

  it('accepts only blake3: + 64 lowercase hex digits', () => {
    const good = `blake3:${'0123456789abcdef'.repeat(4)}`;
    expect(isContentHash(good)).toBe(true);
    expect(parseContentHash(good)).toBe(good);
    for (const bad of BAD_HASHES) {
      expect(isContentHash(bad), JSON.stringify(bad)).toBe(false);
      expect(() => parseContentHash(bad, 'contentHash')).toThrow(StrataError);
      try {
        parseContentHash(bad, 'contentHash');
      } catch (error) {
        expect((error as StrataError).code).toBe('INVALID_ARGUMENT');
        expect((error as StrataError).message).toMatch(/^contentHash must be "blake3:"/);
        expect((error as StrataError).details).toMatchObject({ field: 'contentHash' });
      }
    }
    expect(() => parseContentHash(42)).toThrow(/hash must be/);
  });
});

describe('directory fsync coalescing', () => {
  it('a request made while an fsync runs waits for the next one, shared with other late arrivals', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'strata-dirsync-'));
    try {
      const syncer = new DirectorySyncer();
      const first = syncer.sync(dir);
      const second = syncer.sync(dir);
      const third = syncer.sync(dir);
      expect(second).not.toBe(first); // the running fsync may predate the caller's rename
      expect(third).toBe(second); // late arrivals share the next one
      let secondDone = false;
      void second.then(() => {
        secondDone = true;
      });
      await first;
      expect(secondDone).toBe(false);
      const fourth = syncer.sync(dir); // arrives while `second` runs: needs yet another
      expect(fourth).not.toBe(second);
      await Promise.all([second, fourth]);
      await expect(syncer.sync(join(dir, 'absent'))).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('object pack group commit', () => {
  let root: string;
  let pack: PackObjects;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-pack-'));
    pack = PackObjects.open(join(root, 'packed.sqlite'), { now: () => 1 });
  });
  afterEach(async () => {
    await pack.close();
    await rm(root, { recursive: true, force: true });
  });

  it('puts of one turn share one transaction; puts made during a commit share the next', async () => {
    const put = (i: number) => {
      const data = bytes(1000, i);
      return pack.put(hashBuffer(data), data);
    };
    const first = Array.from({ length: 500 }, (_, i) => put(i));
    // setImmediate after the batch was sent: the commit is running in the writer thread now.
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(pack.stats.batches).toBe(0);
    const second = Array.from({ length: 500 }, (_, i) => put(500 + i));
    expect(await Promise.all(first)).toEqual(Array(500).fill(true));
    expect(await Promise.all(second)).toEqual(Array(500).fill(true));
    expect(pack.stats).toMatchObject({ batches: 2, ops: 1000 });
    // a put resolves only after its commit: another connection sees every row
    const db = new Database(join(root, 'packed.sqlite'), { readonly: true });
    expect(db.prepare('SELECT count(*) AS n FROM objects').get()).toEqual({ n: 1000 });
    db.close();
    expect(await put(0)).toBe(false);
  });

  it('checkpoints the WAL once the writer is idle, not inside the commits of a bulk put', async () => {
    // 12 MiB of puts: SQLite's automatic checkpoint (at 1,000 WAL pages) would have copied most of
    // it into the database file during these commits, while later puts waited.
    const puts = Array.from({ length: 3000 }, (_, i) => {
      const data = bytes(4096, i);
      return pack.put(hashBuffer(data), data);
    });
    expect(await Promise.all(puts)).toEqual(Array(3000).fill(true));
    const file = join(root, 'packed.sqlite');
    expect(pack.stats.checkpoints).toBe(0);
    expect((await stat(file)).size).toBeLessThan(1 << 20);
    expect((await stat(`${file}-wal`)).size).toBeGreaterThan(12 << 20);
    // idle: the thread copies the WAL into the database file (a reader sees the same rows throughout)
    await waitFor('an idle checkpoint', () => (pack.stats.checkpoints > 0 ? true : undefined));
    expect((await stat(file)).size).toBeGreaterThan(12 << 20);
    const db = new Database(file, { readonly: true });
    expect(db.prepare('SELECT count(*) AS n FROM objects').get()).toEqual({ n: 3000 });
    db.close();
  });
});

describe('local content store', () => {
  let root: string;
  let store: ContentStore;
  let now = 1_800_000_000_123; // not a round number: catches ms lost in float seconds
  const clock: Clock = { now: () => now };

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-cs-local-'));
    store = await createLocalContentStore({ root, clock });
  });
  afterEach(async () => {
    await store.close();
    await rm(root, { recursive: true, force: true });
  });

  const loosePath = (hash: ContentHash) => join(root, 'objects', hash.slice(7, 9), hash.slice(9));
  const exists = (path: string) => access(path).then(
    () => true,
    () => false,
  );
  const packedRow = (hash: ContentHash) => {
    const db = new Database(join(root, 'objects', 'packed.sqlite'), { readonly: true });
    try {
      return db.prepare('SELECT size, touched_at FROM objects WHERE hash = ?').get(hash);
    } finally {
      db.close();
    }
  };
  const tmpEntries = () => readdir(join(root, 'tmp'));

  it('stores a dataset file from the chunking pass: shards verified, no temp file left, even when two ingests race', async () => {
    const source = join(root, 'dataset.bin');
    const data = Buffer.concat([bytes(6 * 1024 * 1024, 7), bytes(3000, 8)]);
    await writeFile(source, data);
    const params = chunkerParams({ minSize: 256 * 1024, avgSize: 1024 * 1024, maxSize: 4 * 1024 * 1024 });
    const [first, second] = await Promise.all([store.putDatasetFile!(source, params), store.putDatasetFile!(source, params)]);
    expect(second.shards).toEqual(first.shards);
    expect(first.hash).toBe(hashBuffer(data));
    // Each distinct shard was created once between the two, and every stored shard holds its bytes.
    expect(first.newShards + second.newShards).toBe(new Set(first.shards.map((s) => s.hash)).size);
    let offset = 0;
    for (const shard of first.shards) {
      expect(hashBuffer(data.subarray(offset, offset + shard.size))).toBe(shard.hash);
      expect(await store.verify(shard.hash)).toBe('ok');
      offset += shard.size;
    }
    expect(offset).toBe(data.length);
    expect(await tmpEntries()).toEqual([]);
    // Again: nothing new, nothing staged.
    const third = await store.putDatasetFile!(source, params);
    expect(third.newShards).toBe(0);
    expect(await tmpEntries()).toEqual([]);
  });

  it('packs objects up to 64 KiB and stores larger ones loose, sharded by hash prefix', async () => {
    const atLimit = await store.putBuffer(bytes(64 * 1024, 1));
    const overLimit = await store.put(chunked(bytes(64 * 1024 + 1, 2), 10_000));
    expect(packedRow(atLimit.hash)).toEqual({ size: 65536, touched_at: now });
    expect(await exists(loosePath(atLimit.hash))).toBe(false);
    expect(packedRow(overLimit.hash)).toBeUndefined();
    const info = await stat(loosePath(overLimit.hash));
    expect(info.size).toBe(64 * 1024 + 1);
    expect(info.mode & 0o777).toBe(0o444); // stored objects are read-only
    expect(await tmpEntries()).toEqual([]);
  });

  it('honours smallObjectMaxBytes and rejects a bad one', async () => {
    const tiny = await createLocalContentStore({ root: join(root, 'tiny'), smallObjectMaxBytes: 10 });
    try {
      const r = await tiny.putBuffer(bytes(11, 1));
      expect(await exists(join(root, 'tiny', 'objects', r.hash.slice(7, 9), r.hash.slice(9)))).toBe(true);
    } finally {
      await tiny.close();
    }
    for (const bad of [-1, 1.5, 64 << 20]) {
      await expect(createLocalContentStore({ root, smallObjectMaxBytes: bad })).rejects.toThrow(TypeError);
    }
  });

  it('takes touchedAtMs from the injected clock, and a dedup put refreshes it', async () => {
    const small = await store.putBuffer(bytes(100, 1));
    const large = await store.putBuffer(bigBytes(200_000, 2));
    expect((await store.stat(small.hash))?.touchedAtMs).toBe(now);
    expect((await store.stat(large.hash))?.touchedAtMs).toBe(now);
    now += 86_400_007;
    expect((await store.putBuffer(bytes(100, 1))).created).toBe(false);
    expect((await store.put(chunked(bigBytes(200_000, 2), 30_000))).created).toBe(false);
    for await (const info of store.list()) expect(info.touchedAtMs).toBe(now);
  });

  it('detects a corrupted loose object on read and verify, and a re-put heals it', async () => {
    const data = bigBytes(3_000_000, 3);
    const { hash } = await store.putBuffer(data);
    const handle = await open(loosePath(hash), 'r+'); // root ignores the 0444 mode; so would an accident
    await handle.write(Buffer.from([data[1_500_000]! ^ 0xff]), 0, 1, 1_500_000);
    await handle.close();
    const error = await streamError(await store.open(hash));
    expect(error).toBeInstanceOf(StrataError);
    expect((error as StrataError).code).toBe('CONTENT_CORRUPT');
    expect((error as StrataError).message).toContain(hash);
    expect(await store.verify(hash)).toBe('corrupt');
    await expectStrataError(store.readBuffer(hash), 'CONTENT_CORRUPT');
    // A ranged read is not verified (documented): it returns the bytes as stored.
    expect((await collect(await store.open(hash, { start: 1_500_000, end: 1_500_000 })))[0]).toBe(data[1_500_000]! ^ 0xff);
    expect(await store.put(chunked(data, 1 << 20))).toEqual({ hash, size: data.length, created: true });
    expect(await store.verify(hash)).toBe('ok');
    expect(await collect(await store.open(hash))).toEqual(data);
  });

  it('replaces a truncated loose object instead of keeping it', async () => {
    const data = bigBytes(500_000, 4);
    const { hash } = await store.putBuffer(data);
    await writeFile(loosePath(hash), data.subarray(0, 1000));
    expect(await store.verify(hash)).toBe('corrupt');
    expect((await store.putBuffer(data)).created).toBe(true);
    expect(await store.verify(hash)).toBe('ok');
  });

  it('detects a corrupted packed object, sends no byte of it, and a re-put heals it', async () => {
    const data = bytes(5000, 5);
    const { hash } = await store.putBuffer(data);
    const db = new Database(join(root, 'objects', 'packed.sqlite'));
    db.prepare('UPDATE objects SET data = ? WHERE hash = ?').run(bytes(5000, 6), hash);
    db.close();
    expect(await store.verify(hash)).toBe('corrupt');
    const stream = await store.open(hash);
    let received = 0;
    stream.on('data', (chunk: Buffer) => {
      received += chunk.length;
    });
    const error = await new Promise((resolve) => stream.on('error', resolve));
    expect((error as StrataError).code).toBe('CONTENT_CORRUPT');
    expect(received).toBe(0);
    expect(await store.putBuffer(data)).toEqual({ hash, size: 5000, created: true });
    expect(await store.readBuffer(hash)).toEqual(data);
  });

  it('reads many small objects at once, packed and loose, verified; a corrupt one fails the batch', async () => {
    const packed = await Promise.all([1, 2, 3].map((i) => store.putBuffer(bytes(3000, 20 + i))));
    const loose = await store.putBuffer(bytes(100_000, 30));
    const all = [...packed.map((p) => p.hash), loose.hash];
    const found = await store.readBuffers!(all);
    expect([...found.keys()].sort()).toEqual([...all].sort());
    for (const [i, p] of packed.entries()) expect(found.get(p.hash)).toEqual(Buffer.from(bytes(3000, 21 + i)));
    expect(found.get(loose.hash)!.length).toBe(100_000);
    const db = new Database(join(root, 'objects', 'packed.sqlite'));
    db.prepare('UPDATE objects SET data = ? WHERE hash = ?').run(bytes(3000, 99), packed[1]!.hash);
    db.close();
    await expectStrataError(store.readBuffers!(all), 'CONTENT_CORRUPT');
    await expectStrataError(store.readBuffers!([hashBuffer(Buffer.from('absent'))]), 'CONTENT_NOT_FOUND');
  });

  it('reads a large batch in the reader threads: exact bytes, corruption and absence detected', async () => {
    // 150: the second batch spans three of the reader's 64-row statements, the last one partial.
    const inputs = Array.from({ length: 150 }, (_, i) => bytes(1000 + i * 10, 200 + i));
    const stored = await Promise.all(inputs.map((data) => store.putBuffer(data)));
    const loose = await store.putBuffer(bytes(150_000, 300));
    const hashes = [...stored.map((s) => s.hash), loose.hash];
    const [first, second] = await Promise.all([store.readBuffers!(hashes.slice(0, 20)), store.readBuffers!(hashes.slice(20))]);
    for (const [i, s] of stored.entries()) expect((i < 20 ? first : second).get(s.hash)).toEqual(Buffer.from(inputs[i]!));
    expect(second.get(loose.hash)!.length).toBe(150_000);
    const db = new Database(join(root, 'objects', 'packed.sqlite'));
    db.prepare('UPDATE objects SET data = ? WHERE hash = ?').run(bytes(1500, 1), stored[5]!.hash);
    db.close();
    await expectStrataError(store.readBuffers!(hashes), 'CONTENT_CORRUPT');
    const absent = Array.from({ length: 20 }, (_, i) => hashBuffer(Buffer.from(`absent ${i}`)));
    await expectStrataError(store.readBuffers!(absent), 'CONTENT_NOT_FOUND');
  });

  it('leaves no temp file behind after any failed put', async () => {
    const large = bigBytes(3_000_000, 7);
    const file = join(root, 'input.bin');
    await writeFile(file, large);
    await expectStrataError(store.put(chunked(large, 100_000), { maxBytes: 2_000_000 }), 'BODY_TOO_LARGE');
    await expectStrataError(store.putFile(file, { maxBytes: 2_000_000 }), 'BODY_TOO_LARGE');
    await expectStrataError(store.put(chunked(large, 100_000), { expectedHash: hashBuffer(Buffer.from('x')) }), 'CONTENT_CORRUPT');
    await expectStrataError(store.putFile(file, { expectedHash: hashBuffer(Buffer.from('x')) }), 'CONTENT_CORRUPT');
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield* chunked(large, 1 << 20);
      throw new Error('disconnected');
    }
    await expect(store.put(failing())).rejects.toThrow('disconnected');
    expect(await tmpEntries()).toEqual([]);
    expect(await listAll(store)).toEqual(new Map());
  });

  it('removes temp files of dead writers on open, keeps those of live ones', async () => {
    await store.close();
    const tmp = join(root, 'tmp');
    const live = `${process.pid}-0000.tmp`;
    for (const name of ['garbage.tmp', '999999999-abcd.tmp', live]) await writeFile(join(tmp, name), 'partial');
    store = await createLocalContentStore({ root, clock });
    expect(await tmpEntries()).toEqual([live]);
  });

  it('keeps objects across reopen and refuses calls after close', async () => {
    const small = await store.putBuffer(bytes(10, 1));
    const large = await store.putBuffer(bigBytes(100_000, 1));
    await store.close();
    await expectStrataError(store.putBuffer(bytes(10, 2)), 'SHUTTING_DOWN', /closed/);
    await expectStrataError(store.has(small.hash), 'SHUTTING_DOWN');
    store = await createLocalContentStore({ root, clock });
    expect(await listAll(store)).toEqual(new Map([[small.hash, 10], [large.hash, 100_000]]));
  });

  it('close() stops the hash workers: a large put still streaming fails with SHUTTING_DOWN and cleans up', async () => {
    let resume!: () => void;
    const paused = new Promise<void>((resolve) => {
      resume = resolve;
    });
    let reachedPause!: () => void;
    const atPause = new Promise<void>((resolve) => {
      reachedPause = resolve;
    });
    async function* slow(): AsyncGenerator<Uint8Array> {
      yield bigBytes(3_000_000, 1);
      reachedPause();
      await paused;
      yield bigBytes(3_000_000, 2);
    }
    const pending = store.put(slow());
    await atPause;
    expect(await tmpEntries()).toHaveLength(1); // staging has started
    const small = store.putBuffer(bytes(10, 3)); // queued before close: committed by close
    await store.close();
    expect((await small).created).toBe(true);
    resume();
    await expectStrataError(pending, 'SHUTTING_DOWN');
    expect(await tmpEntries()).toEqual([]);
    store = await createLocalContentStore({ root, clock });
    expect(await store.has(hashBuffer(bytes(10, 3)))).toBe(true);
  });

  it('commits concurrent small puts in shared batches', async () => {
    const results = await Promise.all(Array.from({ length: 2000 }, (_, i) => store.putBuffer(bytes(1024, i))));
    expect(results.every((r) => r.created)).toBe(true);
    expect((await listAll(store)).size).toBe(2000);
  });
});
