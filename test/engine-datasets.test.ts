// Datasets in the engine: rules decide which files become shards behind a manifest; writes store only
// new shards; reads (whole and ranged) assemble exactly; gc and fsck follow the manifests.
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encodeManifest, parseManifest } from '../engine/datasets/manifest.js';
import { isStrataError } from '../engine/errors.js';
import { hashBuffer } from '../engine/hash.js';
import { alice, openTestEngine, readAll, type TestEngine } from './helpers/world.js';

/** Deterministic pseudo-random bytes (content-defined chunking needs entropy to find cut points). */
function pseudoRandom(size: number, seed: number): Buffer {
  const out = Buffer.allocUnsafe(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out.writeUInt32LE(x >>> 0, Math.min(i, size - 4));
  }
  return out;
}

describe('engine: datasets', () => {
  let t: TestEngine;
  beforeEach(async () => {
    t = await openTestEngine({ gcGraceMs: 0 });
  });
  afterEach(async () => {
    await t.dispose();
  });

  const put = async (path: string, data: Buffer, size = true) => {
    const file = join(t.home, `src-${Math.random().toString(16).slice(2)}`);
    await writeFile(file, data);
    return t.engine.writeFile({ projectId: t.projectId, path, actor: alice, content: size ? { file, size: data.length } : { file } });
  };
  const read = async (path: string, range?: { start: number; end: number }) =>
    readAll((await t.engine.readFile({ projectId: t.projectId, path, ...(range ? { range } : {}) })).stream);

  it('stores a tracked file as shards behind a canonical manifest and reads it back exactly', async () => {
    await t.engine.trackDataset({ projectId: t.projectId, pattern: 'data/*.bin', actor: alice });
    const data = pseudoRandom(12 * 1024 * 1024, 7);
    const { version, entry } = await put('data/a.bin', data);
    expect(version.dataset).toBe(true);
    expect(entry.dataset).toBe(true);
    expect(version.size).toBe(data.length);

    const info = await t.engine.getDatasetManifest({ projectId: t.projectId, path: 'data/a.bin' });
    expect(info.manifestHash).toBe(version.contentHash);
    expect(info.manifest.hash).toBe(hashBuffer(data));
    expect(info.manifest.size).toBe(data.length);
    expect(info.manifest.chunker).toEqual({ algorithm: 'fastcdc-gear64-v1', minSize: 262_144, avgSize: 1_048_576, maxSize: 4_194_304 });
    expect(info.manifest.shards.length).toBeGreaterThan(3);
    const raw = await t.store.readBuffer(info.manifestHash);
    expect(encodeManifest(parseManifest(raw)).equals(raw)).toBe(true);

    expect((await read('data/a.bin')).equals(data)).toBe(true);
    for (const [start, end] of [
      [0, 0],
      [5, 300_000],
      [1_000_000, 5_000_000],
      [data.length - 10, data.length - 1],
      [data.length - 10, data.length + 100],
    ] as const) {
      expect((await read('data/a.bin', { start, end })).equals(data.subarray(start, end + 1))).toBe(true);
    }
    // a file that is not tracked and under the threshold stays a plain object
    const plain = await put('notes/readme.txt', Buffer.from('hello'));
    expect(plain.version.dataset).toBe(false);
  });

  it('stores only the changed shards after a one-byte insert near the start and a 1 MiB overwrite', async () => {
    await t.engine.trackDataset({ projectId: t.projectId, pattern: 'd.bin', actor: alice });
    const data = pseudoRandom(16 * 1024 * 1024, 11);
    await put('d.bin', data);
    const inserted = Buffer.concat([data.subarray(0, 1000), Buffer.from([42]), data.subarray(1000)]);
    await put('d.bin', inserted);
    const overwritten = Buffer.from(inserted);
    pseudoRandom(1024 * 1024, 99).copy(overwritten, 8 * 1024 * 1024);
    await put('d.bin', overwritten);

    const history = (await t.engine.datasetHistory({ projectId: t.projectId, path: 'd.bin' })).items;
    expect(history).toHaveLength(3);
    expect(history[2]!.newShards).toBeNull();
    expect(history[1]!.newShards).toBeGreaterThanOrEqual(1);
    expect(history[1]!.newShards).toBeLessThanOrEqual(3);
    expect(history[0]!.newShards).toBeGreaterThanOrEqual(1);
    expect(history[0]!.newShards).toBeLessThanOrEqual(3);
    // What each added, in bytes: a few shards' worth, far below the 16 MiB file; none for the first.
    expect(history[2]!.newBytes).toBeNull();
    for (const item of history.slice(0, 2)) {
      expect(item.newBytes).toBeGreaterThan(0);
      expect(item.newBytes).toBeLessThan(6 * 1024 * 1024);
    }
    expect((await read('d.bin')).equals(overwritten)).toBe(true);
    // every version still reads back as written
    const [v2, v1, v0] = history.map((h) => h.version.versionId);
    for (const [versionId, bytes] of [
      [v0, data],
      [v1, inserted],
      [v2, overwritten],
    ] as const) {
      expect((await readAll((await t.engine.readFile({ projectId: t.projectId, versionId: versionId! })).stream)).equals(bytes)).toBe(true);
    }
  });

  it('re-cuts a stream that turns out larger than the threshold; gc keeps referenced shards, fsck checks them', async () => {
    t.clock.set(Date.now()); // loose objects carry real mtimes
    await t.engine.setDatasetThreshold({ projectId: t.projectId, thresholdBytes: 1024 * 1024 });
    const data = pseudoRandom(5 * 1024 * 1024, 3);
    async function* chunks() {
      for (let i = 0; i < data.length; i += 65536) yield data.subarray(i, i + 65536);
    }
    const { version } = await t.engine.writeFile({ projectId: t.projectId, path: 'big.raw', actor: alice, content: chunks() });
    expect(version.dataset).toBe(true);
    t.clock.advance(120_000);
    const report = await t.engine.gc({ graceMs: 60_000 });
    // the whole object the stream was first stored as is garbage now
    expect(report.objectsDeleted).toBe(1);
    expect((await read('big.raw')).equals(data)).toBe(true);
    const fsck = await t.engine.fsck();
    expect(fsck.ok).toBe(true);
    const manifest = (await t.engine.getDatasetManifest({ projectId: t.projectId, path: 'big.raw' })).manifest;
    expect(fsck.referencesChecked).toBeGreaterThanOrEqual(manifest.shards.length + 1);

    // once nothing references the manifest, its shards are garbage too
    await t.engine.deleteFile({ projectId: t.projectId, path: 'big.raw', actor: alice });
    await t.engine.setRetention({ projectId: t.projectId, maxVersions: 1, actor: alice });
    await t.engine.settle();
    // retention released the manifest and, with it, its shards
    for (const shard of manifest.shards) expect(await t.store.has(shard.hash)).toBe(false);
    expect(await t.store.has(version.contentHash!)).toBe(false);
    expect((await t.engine.fsck()).ok).toBe(true);
  });

  it('spools a stream that is a dataset by path or declared size: only shards and the manifest are stored', async () => {
    await t.engine.trackDataset({ projectId: t.projectId, pattern: 'up/*.bin', actor: alice });
    const data = pseudoRandom(6 * 1024 * 1024, 21);
    async function* chunks() {
      for (let i = 0; i < data.length; i += 65536) yield data.subarray(i, i + 65536);
    }
    const { version } = await t.engine.writeFile({ projectId: t.projectId, path: 'up/a.bin', actor: alice, content: chunks(), sizeHint: data.length });
    expect(version.dataset).toBe(true);
    const manifest = (await t.engine.getDatasetManifest({ projectId: t.projectId, path: 'up/a.bin' })).manifest;
    let objects = 0;
    for await (const _ of t.store.list()) objects += 1;
    expect(objects).toBe(new Set(manifest.shards.map((s) => s.hash)).size + 1);
    expect(await t.store.has(hashBuffer(data))).toBe(false);
    expect((await read('up/a.bin')).equals(data)).toBe(true);
  });

  it('chunks a file given without its size straight from the file: no whole-file object is stored', async () => {
    await t.engine.setDatasetThreshold({ projectId: t.projectId, thresholdBytes: 1024 * 1024 });
    const data = pseudoRandom(6 * 1024 * 1024, 23);
    const { version } = await put('sizeless.bin', data, false);
    expect(version.dataset).toBe(true);
    const manifest = (await t.engine.getDatasetManifest({ projectId: t.projectId, path: 'sizeless.bin' })).manifest;
    let objects = 0;
    for await (const _ of t.store.list()) objects += 1;
    expect(objects).toBe(new Set(manifest.shards.map((s) => s.hash)).size + 1);
    expect(await t.store.has(hashBuffer(data))).toBe(false);
    expect((await read('sizeless.bin')).equals(data)).toBe(true);
  });

  it('track converts matching files of the current tree; restore and rename keep the dataset flag', async () => {
    const data = randomBytes(3 * 1024 * 1024);
    const first = await put('raw/run-1.dat', data);
    expect(first.version.dataset).toBe(false);
    const { rules, converted } = await t.engine.trackDataset({ projectId: t.projectId, pattern: 'raw/**', actor: alice });
    expect(rules.tracked).toEqual(['raw/**']);
    expect(converted.map((v) => v.path)).toEqual(['raw/run-1.dat']);
    expect(converted[0]!.dataset).toBe(true);
    expect((await read('raw/run-1.dat')).equals(data)).toBe(true);
    expect((await t.engine.listDatasets(t.projectId)).map((e) => e.path)).toEqual(['raw/run-1.dat']);

    const restored = await t.engine.restoreVersion({ projectId: t.projectId, versionId: converted[0]!.versionId, actor: alice });
    expect(restored.version.dataset).toBe(true);
    const moved = await t.engine.renameFile({ projectId: t.projectId, from: 'raw/run-1.dat', to: 'raw/run-2.dat', actor: alice });
    expect(moved.created.version.dataset).toBe(true);
    expect((await read('raw/run-2.dat')).equals(data)).toBe(true);

    const notDataset = await t.engine.getDatasetManifest({ projectId: t.projectId, versionId: first.version.versionId }).catch((e: unknown) => e);
    expect(isStrataError(notDataset, 'NOT_A_DATASET')).toBe(true);
    for (const bad of ['', '/abs', 'a/../b', 'x/', 'bad\u0001']) {
      const error = await t.engine.trackDataset({ projectId: t.projectId, pattern: bad, actor: alice }).catch((e: unknown) => e);
      expect(isStrataError(error, 'INVALID_ARGUMENT')).toBe(true);
    }
    expect((await t.engine.getDatasetRules(t.projectId)).tracked).toEqual(['raw/**']);
    expect((await t.engine.untrackDataset({ projectId: t.projectId, pattern: 'raw/**' })).tracked).toEqual([]);
  });
});
