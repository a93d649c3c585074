// The workstation's side of sync in the engine (issue 14): the outbox is the version records, each
// with the version it replaced; pulled versions are recorded with their own ids and never queued;
// a path with a change not pushed yet is left for the push; and retention never prunes what the
// server has not had.
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PulledVersion } from '../engine/commands/sync-adopt.js';
import type { VersionRecord } from '../engine/types.js';
import { alice, openTestEngine, type TestEngine } from './helpers/world.js';

describe('engine: the sync outbox and pulled versions', () => {
  let t: TestEngine;
  beforeEach(async () => {
    t = await openTestEngine();
  });
  afterEach(async () => {
    await t.dispose();
  });

  const write = async (path: string, text: string) => (await t.engine.writeFile({ projectId: t.projectId, path, actor: alice, content: Buffer.from(text) })).version;
  const outbox = async (afterSeq = 0) => (await t.engine.syncOutbox({ projectId: t.projectId, afterSeq, limit: 1000 })).items;
  /** A version as another workstation made it, its content already here. */
  const remote = async (path: string, text: string | null, current = true): Promise<PulledVersion> => {
    const stored = text === null ? null : await t.store.putBuffer(Buffer.from(text));
    const record: VersionRecord = {
      versionId: randomUUID(),
      projectId: t.projectId,
      path,
      contentHash: stored === null ? null : stored.hash,
      size: stored === null ? 0 : stored.size,
      actor: { id: 'u-bob', kind: 'user', name: 'bob' },
      timestamp: '2026-11-25T10:00:00.000Z',
      kind: text === null ? 'delete' : 'write',
      restoredFrom: null,
      executable: false,
      symlink: false,
      dataset: false,
    };
    return { record, current };
  };

  it('queues every version made here with the version it replaced, in commit order', async () => {
    const v1 = await write('fit.m', 'one');
    const v2 = await write('fit.m', 'two');
    const deleted = (await t.engine.deleteFile({ projectId: t.projectId, path: 'fit.m', actor: alice })).version;
    const items = await outbox();
    expect(items.map((i) => [i.record.versionId, i.baseVersionId, i.pulled])).toEqual([
      [v1.versionId, null, false],
      [v2.versionId, v1.versionId, false],
      [deleted.versionId, v2.versionId, false],
    ]);
    expect((await outbox(items[1]!.seq)).map((i) => i.record.versionId)).toEqual([deleted.versionId]);
    expect(await t.engine.syncOutboxStats({ projectId: t.projectId, afterSeq: 0 })).toMatchObject({ count: 3, bytes: 6 });
  });

  it('records pulled versions with their own ids, marked pulled; older ones join history only', async () => {
    const mine = await write('fit.m', 'mine');
    const pushedSeq = (await outbox()).at(-1)!.seq;
    const older = await remote('fit.m', 'theirs, superseded', false);
    const newer = await remote('fit.m', 'theirs, current');
    const outcomes = await t.engine.adoptSyncedVersions({ projectId: t.projectId, pushedSeq, versions: [older, newer] });
    expect(outcomes.map((o) => o.result)).toEqual(['history', 'adopted']);
    const entry = await t.engine.stat({ projectId: t.projectId, path: 'fit.m' });
    expect(entry?.versionId).toBe(newer.record.versionId);
    const history = (await t.engine.history({ projectId: t.projectId, path: 'fit.m', limit: 10 })).items;
    expect(history.map((v) => v.versionId)).toEqual([newer.record.versionId, older.record.versionId, mine.versionId]);
    expect(history[0]!.actor.name).toBe('bob');
    // Pulled versions are not this workstation's to push.
    expect((await outbox(pushedSeq)).every((i) => i.pulled)).toBe(true);
    expect((await t.engine.syncOutboxStats({ projectId: t.projectId, afterSeq: pushedSeq })).count).toBe(0);
    // The feed brings this workstation's own versions back: known without asking the store.
    const known = await t.engine.syncKnownVersions({ projectId: t.projectId, versionIds: [mine.versionId, newer.record.versionId, randomUUID()] });
    expect([...known].sort()).toEqual([mine.versionId, newer.record.versionId].sort());
    // Delivered twice: known, nothing recorded.
    expect((await t.engine.adoptSyncedVersions({ projectId: t.projectId, pushedSeq, versions: [newer] }))[0]!.result).toBe('known');
  });

  it('leaves a path with a change not pushed yet for the push, and stops there', async () => {
    await write('fit.m', 'pushed');
    const pushedSeq = (await outbox()).at(-1)!.seq;
    await write('fit.m', 'not pushed yet');
    const theirs = await remote('fit.m', 'theirs');
    const other = await remote('other.m', 'other');
    const outcomes = await t.engine.adoptSyncedVersions({ projectId: t.projectId, pushedSeq, versions: [theirs, other] });
    expect(outcomes.map((o) => o.result)).toEqual(['deferred']);
    expect(await t.engine.stat({ projectId: t.projectId, path: 'other.m' })).toBeNull();
  });

  it('a page commits unrelated paths together, and a path, its parent and its children in feed order', async () => {
    // Committed together (one transaction each run), 500 pulled files took ~3 s one by one (issue 38).
    const many = await Promise.all(Array.from({ length: 300 }, (_, i) => remote(`many/f${i}.txt`, `file ${i}`)));
    // A file 'd', deleted, then a directory 'd' with a file: each step must see the one before it.
    const page = [await remote('d', 'a file'), ...many.slice(0, 150), await remote('d', null), await remote('d/x.txt', 'below'), ...many.slice(150)];
    const outcomes = await t.engine.adoptSyncedVersions({ projectId: t.projectId, pushedSeq: 0, versions: page });
    expect(outcomes.map((o) => o.result)).toEqual(page.map(() => 'adopted'));
    expect(await t.engine.stat({ projectId: t.projectId, path: 'd' })).toBeNull();
    expect((await t.engine.stat({ projectId: t.projectId, path: 'd/x.txt' }))?.versionId).toBe(page[152]!.record.versionId);
    expect(await t.engine.countFiles(t.projectId)).toBe(301);
    // History in feed order: the pulled versions' own ids, oldest first.
    const history = (await t.engine.history({ projectId: t.projectId, limit: 1000 })).items.map((v) => v.versionId).reverse();
    expect(history).toEqual(page.map((p) => p.record.versionId));
  });

  it('a version made here that the server kept at a conflict copy appears there as a copy', async () => {
    const mine = await write('fit.m', 'mine');
    const pushedSeq = (await outbox()).at(-1)!.seq;
    const asCopy = { record: { ...mine, path: 'fit (conflict wsA 2026-11-25 1000).m' }, current: true };
    const [outcome] = await t.engine.adoptSyncedVersions({ projectId: t.projectId, pushedSeq, versions: [asCopy] });
    expect(outcome).toMatchObject({ result: 'copied', path: asCopy.record.path });
    const copy = await t.engine.stat({ projectId: t.projectId, path: asCopy.record.path });
    expect(copy?.contentHash).toBe(mine.contentHash);
  });

  it('a deletion of a file the server kept as a copy deletes the copy here, and the version below it comes down (issue 38)', async () => {
    // Seed 38006 path 11: wsC's `a/a` was kept as `a (conflict wsC …)/a` (the server had the file `a`);
    // wsC then deleted `a/a` and made `a/a/a`. The server deletes the copy and keeps `a/a/a` below it;
    // here the copy's deletion was taken as "known" (its id is the deletion of `a/a`), the copy stayed
    // a file, and `…/a/a` was skipped for good ("'a (conflict …)/a' is a file").
    const mine = await write('a/a', 'v1');
    const copy = 'a (conflict wsC 2026-11-29 0540)/a';
    expect(await t.engine.adoptSyncedVersions({ projectId: t.projectId, pushedSeq: (await outbox()).at(-1)!.seq, versions: [{ record: { ...mine, path: copy }, current: true }] })).toMatchObject([
      { result: 'copied' },
    ]);
    const deleted = (await t.engine.deleteFile({ projectId: t.projectId, path: 'a/a', actor: alice })).version;
    const below = await write('a/a/a', 'v15');
    const pushedSeq = (await outbox()).at(-1)!.seq;
    const outcomes = await t.engine.adoptSyncedVersions({
      projectId: t.projectId,
      pushedSeq,
      versions: [
        { record: { ...deleted, path: copy }, current: true },
        { record: { ...below, path: `${copy}/a` }, current: true },
      ],
    });
    expect(outcomes.map((o) => o.result)).toEqual(['copied', 'copied']);
    expect(await t.engine.stat({ projectId: t.projectId, path: copy })).toBeNull();
    expect((await t.engine.stat({ projectId: t.projectId, path: `${copy}/a` }))?.contentHash).toBe(below.contentHash);
    expect((await t.engine.stat({ projectId: t.projectId, path: 'a/a/a' }))?.versionId).toBe(below.versionId);
    // A deletion of a copy never made here records nothing.
    const never = await t.engine.adoptSyncedVersions({ projectId: t.projectId, pushedSeq, versions: [{ record: { ...deleted, path: 'b (conflict wsC 2026-11-29 0540)' }, current: true }] });
    expect(never.map((o) => o.result)).toEqual(['known']);
    expect((await outbox(pushedSeq)).every((i) => i.pulled)).toBe(true);
  });

  it('a pushed file where the server keeps a directory makes way for it (the server kept the file as a conflict copy)', async () => {
    // The sync model's defect 2 (seed 2000): offline, this workstation replaced the directory `a` by
    // a file, another edited `a/a`. The server kept `a/a` and the file as `a (conflict …)`; the file
    // `a` stayed here and `a/a` was skipped for good ("'a' is a file, so 'a/a' cannot be created below it").
    await write('a/a', 'v1');
    await t.engine.deleteFile({ projectId: t.projectId, path: 'a/a', actor: alice });
    const mine = await write('a', 'file a here');
    const pushedSeq = (await outbox()).at(-1)!.seq;
    const theirs = await remote('a/a', 'edited there');
    const asCopy = { record: { ...mine, path: 'a (conflict wsB 2026-11-25 1000)' }, current: true };
    const outcomes = await t.engine.adoptSyncedVersions({ projectId: t.projectId, pushedSeq, versions: [theirs, asCopy] });
    expect(outcomes.map((o) => o.result)).toEqual(['adopted', 'copied']);
    expect((await t.engine.stat({ projectId: t.projectId, path: 'a/a' }))?.versionId).toBe(theirs.record.versionId);
    expect(await t.engine.stat({ projectId: t.projectId, path: 'a' })).toBeNull();
    // Nothing lost: the file's bytes are the copy's, and its version stays in the path's history.
    expect((await t.engine.stat({ projectId: t.projectId, path: asCopy.record.path }))?.contentHash).toBe(mine.contentHash);
    const history = (await t.engine.history({ projectId: t.projectId, path: 'a', limit: 10 })).items;
    expect(history.map((v) => v.contentHash)).toEqual([null, mine.contentHash]);
    // The way made is not this workstation's change to push.
    expect((await outbox(pushedSeq)).every((i) => i.pulled)).toBe(true);
  });

  it('a file not on the server (refused, or not pushed yet) does not make way', async () => {
    await write('a/a', 'v1');
    await t.engine.deleteFile({ projectId: t.projectId, path: 'a/a', actor: alice });
    const mine = await write('a', 'file a here');
    const pushedSeq = (await outbox()).at(-1)!.seq;
    const refused = await t.engine.adoptSyncedVersions({ projectId: t.projectId, pushedSeq, versions: [await remote('a/a', 'edited there')], refused: [mine.versionId] });
    expect(refused.map((o) => o.result)).toEqual(['skipped']);
    expect((await t.engine.stat({ projectId: t.projectId, path: 'a' }))?.versionId).toBe(mine.versionId);
    // Not pushed yet: pushed first (the server decides), not skipped for good.
    const again = await write('a', 'edited again, not pushed');
    const unpushed = await t.engine.adoptSyncedVersions({ projectId: t.projectId, pushedSeq, versions: [await remote('a/b', 'new there')] });
    expect(unpushed.map((o) => o.result)).toEqual(['deferred']);
    expect((await t.engine.stat({ projectId: t.projectId, path: 'a' }))?.versionId).toBe(again.versionId);
  });

  it('a directory whose pushed files the server kept as conflict copies makes way for the server\'s file there', async () => {
    // The mirror of defect 2 (the sync model's seed 42000 path 8): offline, this workstation wrote
    // `a/a/b` while another replaced the directory `a` by a file. The server kept its file `a` and
    // this one as `a (conflict …)/a/b`; the directory stayed here and `a` was skipped for good
    // ("'a' is a directory").
    const mine = await write('a/a/b', 'v28');
    const pushedSeq = (await outbox()).at(-1)!.seq;
    const theirs = await remote('a', 'v95');
    const asCopy = { record: { ...mine, path: 'a (conflict wsA 2026-11-29 0955)/a/b' }, current: true };
    const asked: string[] = [];
    const mayReplaceDirectory = async (path: string) => {
      asked.push(path);
      return true;
    };
    const outcomes = await t.engine.adoptSyncedVersions({ projectId: t.projectId, pushedSeq, versions: [theirs, asCopy], mayReplaceDirectory });
    expect(outcomes.map((o) => o.result)).toEqual(['adopted', 'copied']);
    expect(asked).toEqual(['a']);
    expect((await t.engine.stat({ projectId: t.projectId, path: 'a' }))?.versionId).toBe(theirs.record.versionId);
    expect(await t.engine.stat({ projectId: t.projectId, path: 'a/a/b' })).toBeNull();
    // Nothing lost: the bytes are the copy's, and the version stays in the path's history.
    expect((await t.engine.stat({ projectId: t.projectId, path: asCopy.record.path }))?.contentHash).toBe(mine.contentHash);
    const history = (await t.engine.history({ projectId: t.projectId, path: 'a/a/b', limit: 10 })).items;
    expect(history.map((v) => v.contentHash)).toEqual([null, mine.contentHash]);
    expect((await outbox(pushedSeq)).every((i) => i.pulled)).toBe(true);
  });

  it('a directory does not make way for the server\'s file while something in it is not on the server', async () => {
    const mine = await write('a/a/b', 'v28');
    const pushedSeq = (await outbox()).at(-1)!.seq;
    const stat = async (path: string) => (await t.engine.stat({ projectId: t.projectId, path }))?.versionId;
    // On disk the directory holds something the project lacks (the host says no): skipped, as before.
    const onDisk = await t.engine.adoptSyncedVersions({ projectId: t.projectId, pushedSeq, versions: [await remote('a', 'v95')], mayReplaceDirectory: async () => false });
    expect(onDisk.map((o) => o.result)).toEqual(['skipped']);
    // Refused by the server: on no server version.
    const refused = await t.engine.adoptSyncedVersions({ projectId: t.projectId, pushedSeq, versions: [await remote('a', 'v95')], refused: [mine.versionId] });
    expect(refused.map((o) => o.result)).toEqual(['skipped']);
    // A file of the server's below it (its deletion not here): the server's own.
    const pulled = await t.engine.adoptSyncedVersions({ projectId: t.projectId, pushedSeq, versions: [await remote('a/c', 'theirs')] });
    expect(pulled.map((o) => o.result)).toEqual(['adopted']);
    const withPulled = await t.engine.adoptSyncedVersions({ projectId: t.projectId, pushedSeq, versions: [await remote('a', 'v95')] });
    expect(withPulled.map((o) => o.result)).toEqual(['skipped']);
    expect(await stat('a/a/b')).toBe(mine.versionId);
    expect(await stat('a')).toBeUndefined();
    // Not pushed yet: pushed first (the server decides), not skipped for good.
    await t.engine.deleteFile({ projectId: t.projectId, path: 'a/c', actor: alice });
    const again = await write('a/a/b', 'v29, not pushed');
    const unpushed = await t.engine.adoptSyncedVersions({ projectId: t.projectId, pushedSeq, versions: [await remote('a', 'v95')] });
    expect(unpushed.map((o) => o.result)).toEqual(['deferred']);
    expect(await stat('a/a/b')).toBe(again.versionId);
  });

  it('retention never prunes what is not on the server yet', async () => {
    const versions = [];
    for (let i = 0; i < 5; i++) versions.push(await write('fit.m', `v${i}`));
    const seqs = (await outbox()).map((i) => i.seq);
    t.engine.holdRetention(t.projectId, seqs[1]!);
    await t.engine.setRetention({ projectId: t.projectId, maxVersions: 1, actor: alice });
    await t.engine.settle();
    const kept = async () => (await t.engine.history({ projectId: t.projectId, path: 'fit.m', limit: 10 })).items.map((v) => v.versionId);
    // v0 and v1 are on the server: prunable. v2..v4 are not.
    expect(await kept()).toEqual(versions.slice(2).map((v) => v.versionId).reverse());
    t.engine.holdRetention(t.projectId, seqs[4]!);
    await write('fit.m', 'v5');
    await t.engine.settle();
    expect((await kept()).length).toBeLessThanOrEqual(2);
  });

  it('a dataset version an unpushed one replaced is kept until that one is pushed (the push sends a delta against it)', async () => {
    await t.engine.trackDataset({ projectId: t.projectId, pattern: 'data/**', actor: alice });
    await t.engine.setRetention({ projectId: t.projectId, maxVersions: 1, actor: alice });
    const v0 = await write('data/run.bin', 'run 0');
    expect(v0.dataset).toBe(true);
    const seq = async () => (await outbox()).at(-1)!.seq;
    t.engine.holdRetention(t.projectId, await seq());
    const v1 = await write('data/run.bin', 'run 1');
    await write('notes.txt', 'also unpushed');
    await t.engine.settle();
    const kept = async () => (await t.engine.history({ projectId: t.projectId, path: 'data/run.bin', limit: 10 })).items.map((v) => v.versionId);
    expect(await kept()).toEqual([v1.versionId, v0.versionId]);
    // v1 is pushed: v0 goes at the next pruning; v1 is the base of unpushed v2 now.
    t.engine.holdRetention(t.projectId, await seq());
    const v2 = await write('data/run.bin', 'run 2');
    await t.engine.settle();
    expect(await kept()).toEqual([v2.versionId, v1.versionId]);
  });
});
