import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isStrataError } from '../engine/errors.js';
import { alice, countObjects, openTestEngine, readAll, type TestEngine } from './helpers/world.js';

describe('engine: snapshots and tags', () => {
  let t: TestEngine;
  beforeEach(async () => {
    t = await openTestEngine();
  });
  afterEach(async () => {
    await t.dispose();
  });

  const write = (path: string, text: string) => t.engine.writeFile({ projectId: t.projectId, path, actor: alice, content: Buffer.from(text) });
  const read = async (path: string) => (await readAll((await t.engine.readFile({ projectId: t.projectId, path })).stream)).toString();
  const code = (p: Promise<unknown>) =>
    p.then(
      () => 'resolved',
      (e: unknown) => (isStrataError(e) ? e.code : String(e)),
    );

  it('builds a linear chain that pins every path', async () => {
    await write('a.m', 'a1');
    await write('b/c.py', 'c1');
    const s1 = await t.engine.createSnapshot({ projectId: t.projectId, message: 'first', actor: alice });
    expect(s1).toMatchObject({ parentId: null, seq: 1, message: 'first', actor: alice, tags: [], fileCount: 2, totalSize: 4, timestamp: '2026-11-22T09:00:00.000Z' });
    await write('a.m', 'a2!');
    const s2 = await t.engine.createSnapshot({ projectId: t.projectId, actor: alice });
    expect(s2).toMatchObject({ parentId: s1.snapshotId, seq: 2, message: '', fileCount: 2, totalSize: 5 });
    const list = await t.engine.listSnapshots({ projectId: t.projectId });
    expect(list.items.map((s) => s.seq)).toEqual([2, 1]);
    const entries = await t.engine.snapshotEntries({ projectId: t.projectId, snapshotId: s1.snapshotId });
    expect(entries.items.map((e) => [e.path, e.size])).toEqual([
      ['a.m', 2],
      ['b/c.py', 2],
    ]);
  });

  it('diffs two snapshots, and a snapshot against now', async () => {
    await write('keep.txt', 'same');
    await write('change.txt', 'v1');
    await write('gone.txt', 'bye');
    const s1 = await t.engine.createSnapshot({ projectId: t.projectId, actor: alice });
    await write('change.txt', 'v2');
    await t.engine.deleteFile({ projectId: t.projectId, path: 'gone.txt', actor: alice });
    await write('new.txt', 'hi');
    const s2 = await t.engine.createSnapshot({ projectId: t.projectId, actor: alice });
    const diff = await t.engine.diffSnapshots({ projectId: t.projectId, from: s1.snapshotId, to: s2.snapshotId });
    expect(diff.map((d) => [d.path, d.change])).toEqual([
      ['change.txt', 'modified'],
      ['gone.txt', 'removed'],
      ['new.txt', 'added'],
    ]);
    await write('later.txt', 'x');
    const live = await t.engine.diffSnapshots({ projectId: t.projectId, from: s2.snapshotId });
    expect(live.map((d) => [d.path, d.change])).toEqual([['later.txt', 'added']]);
  });

  it('restores a snapshot by repointing paths only, and records only the changed ones', async () => {
    await write('keep.txt', 'same');
    await write('change.txt', 'v1');
    await write('gone.txt', 'bye');
    const s1 = await t.engine.createSnapshot({ projectId: t.projectId, actor: alice });
    await write('change.txt', 'v2');
    await t.engine.deleteFile({ projectId: t.projectId, path: 'gone.txt', actor: alice });
    await write('new.txt', 'created since');
    await t.engine.settle();
    const objectsBefore = await countObjects(t);

    const result = await t.engine.restoreSnapshot({ projectId: t.projectId, snapshotId: s1.snapshotId, actor: alice });
    expect(result.changed).toBe(3);
    expect(result.versions.map((v) => [v.path, v.kind, v.contentHash === null])).toEqual([
      ['change.txt', 'snapshot-restore', false],
      ['gone.txt', 'snapshot-restore', false],
      ['new.txt', 'snapshot-restore', true],
    ]);
    expect(await read('change.txt')).toBe('v1');
    expect(await read('gone.txt')).toBe('bye');
    expect(await read('keep.txt')).toBe('same');
    expect(await code(t.engine.readFile({ projectId: t.projectId, path: 'new.txt' }))).toBe('PATH_NOT_FOUND');
    expect((await t.engine.history({ projectId: t.projectId, path: 'keep.txt' })).items).toHaveLength(1);
    expect(await countObjects(t)).toBe(objectsBefore);

    const again = await t.engine.restoreSnapshot({ projectId: t.projectId, snapshotId: s1.snapshotId, actor: alice });
    expect(again.changed).toBe(0);
  });

  it('tags snapshots uniquely per project', async () => {
    await write('a.txt', '1');
    const s1 = await t.engine.createSnapshot({ projectId: t.projectId, actor: alice });
    const s2 = await t.engine.createSnapshot({ projectId: t.projectId, actor: alice });
    expect(await t.engine.addTag({ projectId: t.projectId, snapshotId: s1.snapshotId, tag: 'v1.0', actor: alice })).toEqual({ tag: 'v1.0', snapshotId: s1.snapshotId });
    expect(await code(t.engine.addTag({ projectId: t.projectId, snapshotId: s2.snapshotId, tag: 'v1.0', actor: alice }))).toBe('TAG_TAKEN');
    expect((await t.engine.getSnapshot(t.projectId, 'v1.0')).snapshotId).toBe(s1.snapshotId);
    expect((await t.engine.getSnapshot(t.projectId, s1.snapshotId)).tags).toEqual(['v1.0']);
    for (const bad of ['', '-x', 'a..b', 'x.lock', 'with space', 'a/b', s2.snapshotId, 'x'.repeat(200)]) {
      expect(await code(t.engine.addTag({ projectId: t.projectId, snapshotId: s2.snapshotId, tag: bad, actor: alice }))).toBe('INVALID_ARGUMENT');
    }
    expect(await t.engine.listTags(t.projectId)).toEqual([{ tag: 'v1.0', snapshotId: s1.snapshotId }]);
    await t.engine.removeTag({ projectId: t.projectId, tag: 'v1.0', actor: alice });
    expect(await code(t.engine.removeTag({ projectId: t.projectId, tag: 'v1.0', actor: alice }))).toBe('TAG_NOT_FOUND');
    expect(await code(t.engine.getSnapshot(t.projectId, 'v1.0'))).toBe('SNAPSHOT_NOT_FOUND');
    // a tag of another project is not visible here
    const other = await t.engine.createProject({ orgId: t.orgId, name: 'other' });
    const so = await t.engine.createSnapshot({ projectId: other.projectId, actor: alice });
    await t.engine.addTag({ projectId: other.projectId, snapshotId: so.snapshotId, tag: 'v1.0', actor: alice });
    expect(await code(t.engine.getSnapshot(t.projectId, 'v1.0'))).toBe('SNAPSHOT_NOT_FOUND');
    expect(await code(t.engine.getSnapshot(t.projectId, so.snapshotId))).toBe('SNAPSHOT_NOT_FOUND');
  });
});
