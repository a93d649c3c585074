import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isStrataError } from '../engine/errors.js';
import type { ContentHash } from '../engine/types.js';
import { alice, openTestEngine, readAll, type TestEngine } from './helpers/world.js';

describe('engine: retention, policy and garbage collection', () => {
  let t: TestEngine;
  beforeEach(async () => {
    t = await openTestEngine();
  });
  afterEach(async () => {
    await t.dispose();
  });

  const write = (path: string, text: string | Buffer) => t.engine.writeFile({ projectId: t.projectId, path, actor: alice, content: Buffer.from(text) });
  const historyOf = async (path: string) => (await t.engine.history({ projectId: t.projectId, path, limit: 1000 })).items;

  it('defaults to unlimited and validates the setting', async () => {
    expect(await t.engine.getRetention(t.projectId)).toEqual({ projectId: t.projectId, maxVersions: 0 });
    for (const bad of [-1, 1.5, Number.NaN, 2_000_000]) {
      const error = await t.engine.setRetention({ projectId: t.projectId, maxVersions: bad, actor: alice }).catch((e: unknown) => e);
      expect(isStrataError(error, 'INVALID_ARGUMENT')).toBe(true);
    }
    expect(await t.engine.getRetention(t.projectId)).toEqual({ projectId: t.projectId, maxVersions: 0 });
  });

  it('prunes oldest first, never a pinned or current version, and collects freed content', async () => {
    const v: Array<{ versionId: string; contentHash: ContentHash | null }> = [];
    for (let i = 0; i < 6; i++) {
      v.push((await write('a.m', `version ${i}`)).version);
      if (i === 1) await t.engine.createSnapshot({ projectId: t.projectId, actor: alice }); // pins v1
    }
    await t.engine.setRetention({ projectId: t.projectId, maxVersions: 2, actor: alice });
    await t.engine.settle();
    const kept = (await historyOf('a.m')).map((r) => r.versionId);
    expect(kept).toEqual([v[5]!.versionId, v[4]!.versionId, v[1]!.versionId]);
    // content of pruned, unpinned versions is gone; pinned and kept content stays
    expect(await t.store.has(v[0]!.contentHash!)).toBe(false);
    expect(await t.store.has(v[2]!.contentHash!)).toBe(false);
    expect(await t.store.has(v[1]!.contentHash!)).toBe(true);
    expect(await t.store.has(v[5]!.contentHash!)).toBe(true);

    // new versions keep being pruned as they arrive
    await write('a.m', 'version 6');
    await t.engine.settle();
    expect((await historyOf('a.m')).map((r) => r.versionId).slice(1)).toEqual([v[5]!.versionId, v[1]!.versionId]);
    expect((await t.engine.fsck()).ok).toBe(true);
  });

  it('keeps content shared with a surviving version', async () => {
    await write('x.txt', 'same bytes');
    await write('y.txt', 'same bytes');
    await write('x.txt', 'other');
    await write('x.txt', 'other 2');
    await t.engine.setRetention({ projectId: t.projectId, maxVersions: 1, actor: alice });
    await t.engine.settle();
    expect((await readAll((await t.engine.readFile({ projectId: t.projectId, path: 'y.txt' })).stream)).toString()).toBe('same bytes');
    expect((await t.engine.fsck()).ok).toBe(true);
  });

  it('keeps only the current content of files the policy does not version', async () => {
    await t.engine.updatePolicy({ projectId: t.projectId, policy: { sizeThreshold: 10, largeFileAllowlist: ['.h5'] } });
    const big = (n: number) => Buffer.alloc(100, n);
    const first = await write('scratch.bin', big(1));
    await write('scratch.bin', big(2));
    await write('results.h5', big(3));
    await write('results.h5', big(4));
    await write('analysis.py', big(5)); // always-list: versioned whatever the size
    await write('analysis.py', big(6));
    await write('small.bin', 'tiny'); // under the threshold: versioned
    await write('small.bin', 'tiny2');
    await t.engine.settle();
    expect(await historyOf('scratch.bin')).toHaveLength(1);
    expect(await t.store.has(first.version.contentHash!)).toBe(false);
    expect(await historyOf('results.h5')).toHaveLength(2);
    expect(await historyOf('analysis.py')).toHaveLength(2);
    expect(await historyOf('small.bin')).toHaveLength(2);
  });

  it('one size rule for every file, datasets included, and every write says whether its history is kept (issue 13 item 4)', async () => {
    await t.engine.updatePolicy({ projectId: t.projectId, policy: { sizeThreshold: 10, largeFileAllowlist: ['.h5'] } });
    await t.engine.trackDataset({ projectId: t.projectId, pattern: 'data/*', actor: alice });
    const big = (n: number) => Buffer.alloc(100, n);
    const first = await write('data/frames.raw', big(1));
    expect(first.version.dataset).toBe(true);
    expect(first.historyKept).toBe(false);
    await write('data/frames.raw', big(2));
    expect((await write('data/cube.h5', big(3))).historyKept).toBe(true);
    await write('data/cube.h5', big(4));
    expect((await write('small.bin', 'tiny')).historyKept).toBe(true);
    await t.engine.settle();
    // a dataset is a large file too: not allowlisted, it keeps only its current version
    expect(await historyOf('data/frames.raw')).toHaveLength(1);
    expect(await historyOf('data/cube.h5')).toHaveLength(2);
    // allowlisted afterwards, its next versions are kept
    await t.engine.updatePolicy({ projectId: t.projectId, policy: { largeFileAllowlist: ['.h5', '.raw'] } });
    expect((await write('data/frames.raw', big(5))).historyKept).toBe(true);
    await t.engine.settle();
    expect(await historyOf('data/frames.raw')).toHaveLength(2);
    expect((await t.engine.fsck()).ok).toBe(true);
  });

  it('gc deletes only unreferenced content older than the grace period', async () => {
    // The store stamps objects with the filesystem's time, so run the engine's clock from real now.
    t.clock.set(Date.now());
    const orphan = await t.store.putBuffer(Buffer.from('nobody points here'));
    const kept = await write('kept.txt', 'referenced');
    expect((await t.engine.gc({ graceMs: 60_000 })).objectsDeleted).toBe(0); // too young
    t.clock.advance(120_000);
    const later = await t.engine.gc({ graceMs: 60_000 });
    expect(later).toMatchObject({ objectsDeleted: 1, bytesFreed: 'nobody points here'.length });
    expect(await t.store.has(orphan.hash)).toBe(false);
    expect(await t.store.has(kept.version.contentHash!)).toBe(true);
    expect((await t.engine.fsck()).ok).toBe(true);
  });
});
