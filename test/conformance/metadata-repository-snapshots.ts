import { describe, expect, it } from 'vitest';
import type { SnapshotCreate } from '../../engine/ports/metadata-repository.js';
import type { Snapshot, SnapshotEntry, VersionRecord } from '../../engine/types.js';
import {
  at,
  collectAll,
  commitAll,
  expectStrataError,
  hashOf,
  OTHER_PROJECT,
  PROJECT,
  type RepositoryGetter,
  recordMaker,
  SERVICE,
  uuidFor,
} from './metadata-repository-fixtures.js';

export function snapshotInput(n: number, projectId = PROJECT): SnapshotCreate {
  return {
    snapshotId: uuidFor(n, projectId === PROJECT ? 0x51 : 0x52),
    projectId,
    message: `snapshot ${n}`,
    actor: SERVICE,
    timestamp: at(1_000 + n),
  };
}

export function pinOf(record: VersionRecord): SnapshotEntry {
  return { path: record.path, versionId: record.versionId, contentHash: record.contentHash!, size: record.size, executable: record.executable, symlink: record.symlink, dataset: record.dataset };
}

export function snapshotConformance(repo: RepositoryGetter): void {
  describe('snapshots', () => {
    it('applies a pushed chain only on the tip it was planned on: the same push landing twice is refused whole', async () => {
      const make = recordMaker();
      const first = make.write('model.py', 'print(1)');
      const [pushed] = await repo().snapshots.importChain(PROJECT, [{ commits: [{ record: first, expectedCurrent: null }], snapshot: snapshotInput(1), tags: [] }], null);
      expect(pushed!.parentId).toBeNull();
      // The same push planned on the empty project by another request, whose planning read the first
      // one's record (so the record's precondition holds): refused by the tip, nothing of it applied.
      const again = make.write('model.py', 'print(1)');
      await expectStrataError(
        repo().snapshots.importChain(PROJECT, [{ commits: [{ record: again, expectedCurrent: first.versionId }], snapshot: snapshotInput(2), tags: ['v1'] }], null),
        'STALE_BASE_VERSION',
        { expectedTip: null, currentTip: pushed!.snapshotId },
      );
      expect((await repo().snapshots.list(PROJECT, { limit: 10 })).items.map((s) => s.snapshotId)).toStrictEqual([pushed!.snapshotId]);
      expect((await repo().versions.history(PROJECT, { path: 'model.py', limit: 10 })).items).toStrictEqual([first]);
      expect(await repo().snapshots.resolveTag(PROJECT, 'v1')).toBeNull();
      // Planned on that tip, a next commit applies.
      const next = make.write('model.py', 'print(2)');
      const [child] = await repo().snapshots.importChain(PROJECT, [{ commits: [{ record: next, expectedCurrent: first.versionId }], snapshot: snapshotInput(3), tags: [] }], pushed!.snapshotId);
      expect(child!.parentId).toBe(pushed!.snapshotId);
      await expectStrataError(repo().snapshots.importChain(PROJECT, [], pushed!.snapshotId), 'STALE_BASE_VERSION', { currentTip: child!.snapshotId });
    });

    it('creates a chain: seq from 1, parent = previous tip, per project', async () => {
      const make = recordMaker();
      await commitAll(repo(), [make.write('a.txt', 'aaa'), make.write('b/c.txt', 'cc')]);
      expect(await repo().snapshots.tip(PROJECT)).toBeNull();
      const first = await repo().snapshots.create(snapshotInput(1));
      const expected: Snapshot = {
        snapshotId: snapshotInput(1).snapshotId,
        projectId: PROJECT,
        parentId: null,
        seq: 1,
        message: 'snapshot 1',
        actor: SERVICE,
        timestamp: at(1_001),
        tags: [],
        fileCount: 2,
        totalSize: 5,
      };
      expect(first).toStrictEqual(expected);
      expect(await repo().snapshots.get(PROJECT, first.snapshotId)).toStrictEqual(expected);
      expect(await repo().snapshots.tip(PROJECT)).toStrictEqual(expected);

      const second = await repo().snapshots.create(snapshotInput(2));
      expect(second).toMatchObject({ parentId: first.snapshotId, seq: 2, fileCount: 2, totalSize: 5 });
      expect((await repo().snapshots.tip(PROJECT))?.snapshotId).toBe(second.snapshotId);

      const other = await repo().snapshots.create(snapshotInput(1, OTHER_PROJECT));
      expect(other).toMatchObject({ parentId: null, seq: 1, fileCount: 0, totalSize: 0 });
      expect(await repo().snapshots.get(OTHER_PROJECT, first.snapshotId)).toBeNull();
      expect(await repo().snapshots.get(PROJECT, uuidFor(404))).toBeNull();
    });

    it('pins the tree as it was, unaffected by later writes, deletes and pruning', async () => {
      const make = recordMaker();
      const [a, , c] = await commitAll(repo(), [make.write('a', '1'), make.write('gone', '2'), make.write('dir/c', '3')]);
      await commitAll(repo(), [make.remove('gone')]);
      const snapshot = await repo().snapshots.create(snapshotInput(1));
      await commitAll(repo(), [make.write('a', 'changed'), make.remove('dir/c'), make.write('new', 'n')]);
      await repo().versions.prune(PROJECT, { keep: 1 });
      const pinned = await repo().snapshots.entries(snapshot.snapshotId, { limit: 10 });
      expect(pinned).toStrictEqual({ items: [pinOf(a!), pinOf(c!)].sort((x, y) => (x.path < y.path ? -1 : 1)) });
      expect(snapshot).toMatchObject({ fileCount: 2, totalSize: 2 });
    });

    it('a batch committed concurrently with a snapshot is wholly in it or wholly after it', async () => {
      const make = recordMaker();
      const batch = Array.from({ length: 200 }, (_, i) => make.write(`f${String(i).padStart(3, '0')}`, `x${i}`));
      const [, snapshot] = await Promise.all([
        repo().versions.commit(batch.map((record) => ({ record }))),
        repo().snapshots.create(snapshotInput(1)),
      ]);
      expect([0, 200]).toContain(snapshot.fileCount);
      const pinned = await repo().snapshots.entries(snapshot.snapshotId, { limit: 1_000 });
      expect(pinned.items).toHaveLength(snapshot.fileCount);
    });

    it('changesFromParents equals the full diff against the parent, including changes undone and deletions', async () => {
      const make = recordMaker();
      await commitAll(repo(), [make.write('a.txt', 'a1'), make.write('b.txt', 'b1'), make.write('c.txt', 'c1')]);
      const first = await repo().snapshots.create(snapshotInput(1));
      expect(await repo().snapshots.changesFromParents(PROJECT, [first.snapshotId])).toEqual([null]);
      await commitAll(repo(), [make.write('a.txt', 'a2'), make.write('b.txt', 'b2'), make.write('b.txt', 'b1'), make.remove('c.txt'), make.write('d.txt', 'd1')]);
      const second = await repo().snapshots.create(snapshotInput(2));
      const third = await repo().snapshots.create(snapshotInput(3));
      const [viaChanges, none, unknown] = await repo().snapshots.changesFromParents(PROJECT, [second.snapshotId, third.snapshotId, uuidFor(99, 9)]);
      const diff = await repo().snapshots.diff(PROJECT, first.snapshotId, second.snapshotId);
      // Every real change is there with the same new side; b.txt (new version, same content) may be too.
      expect(viaChanges!.filter((c) => c.path !== 'b.txt')).toEqual(diff.map((d) => ({ path: d.path, after: d.after })));
      expect(viaChanges!.map((c) => c.path)).toEqual(['a.txt', 'b.txt', 'c.txt', 'd.txt']);
      expect(diff).toHaveLength(3);
      expect(viaChanges!.find((c) => c.path === 'b.txt')!.after!.contentHash).toBe(hashOf('b1'));
      expect(none).toEqual([]);
      expect(unknown).toBeNull();
    });

    it('createPinned: exactly the given pins (not the current tree), appended to the chain; missing pins left out or refused; listAfter oldest first', async () => {
      const make = recordMaker();
      const [a1, b1, gone] = await commitAll(repo(), [make.write('a', 'a1'), make.write('b', 'b1'), make.write('gone', 'g')]);
      const first = await repo().snapshots.create(snapshotInput(1));
      const [a2] = await commitAll(repo(), [make.write('a', 'a2'), make.remove('gone')]);
      const notHere = uuidFor(1234);
      const pins = [
        { path: 'b', versionId: b1!.versionId },
        { path: 'a', versionId: a1!.versionId },
        { path: 'gone', versionId: gone!.versionId },
      ];
      // A pin of a version not here: with requireAll nothing is created.
      await expectStrataError(
        repo().snapshots.createPinned(snapshotInput(2), [...pins, { path: 'x', versionId: notHere }], { requireAll: true }),
        'SNAPSHOT_PINS_MISSING',
        { paths: ['x'], count: 1 },
      );
      expect((await repo().snapshots.tip(PROJECT))!.snapshotId).toBe(first.snapshotId);
      const { snapshot, missing } = await repo().snapshots.createPinned(snapshotInput(2), [...pins, { path: 'x', versionId: notHere }]);
      expect(missing).toEqual(['x']);
      expect(snapshot).toMatchObject({ snapshotId: snapshotInput(2).snapshotId, parentId: first.snapshotId, seq: 2, fileCount: 3, totalSize: 5, message: 'snapshot 2' });
      expect(await repo().snapshots.get(PROJECT, snapshot.snapshotId)).toEqual(snapshot);
      const pinned = await repo().snapshots.entries(snapshot.snapshotId, { limit: 10 });
      expect(pinned.items.map((e) => [e.path, e.versionId])).toEqual([
        ['a', a1!.versionId],
        ['b', b1!.versionId],
        ['gone', gone!.versionId],
      ]);
      // Pinned versions are never pruned; a snapshot after it is taken from the tree as usual.
      await repo().versions.prune(PROJECT, { keep: 1 });
      expect((await repo().snapshots.entries(snapshot.snapshotId, { limit: 10 })).items).toHaveLength(3);
      const third = await repo().snapshots.create(snapshotInput(3));
      expect((await repo().snapshots.entries(third.snapshotId, { limit: 10 })).items.map((e) => [e.path, e.versionId])).toEqual([
        ['a', a2!.versionId],
        ['b', b1!.versionId],
      ]);
      // No change set is claimed across it: a chain walk diffs both in full.
      expect(await repo().snapshots.changesFromParents(PROJECT, [snapshot.snapshotId, third.snapshotId])).toEqual([null, null]);
      expect((await repo().snapshots.listAfter(PROJECT, 1, 10)).map((s) => s.seq)).toEqual([2, 3]);
      expect((await repo().snapshots.listAfter(PROJECT, 0, 1)).map((s) => s.seq)).toEqual([1]);
      // An id is unique across projects.
      await expectStrataError(repo().snapshots.createPinned({ ...snapshotInput(2), projectId: OTHER_PROJECT }, []), 'SNAPSHOT_ID_TAKEN');
    });

    it('pages entries by prefix and lists snapshots newest first', async () => {
      const make = recordMaker();
      const records = await commitAll(
        repo(),
        ['x/1', 'x/2', 'x/3', 'x_/4', 'y', 'x/5'].map((p) => make.write(p, p)),
      );
      const ids: string[] = [];
      for (let n = 1; n <= 5; n += 1) ids.push((await repo().snapshots.create(snapshotInput(n))).snapshotId);
      const pins = await collectAll((cursor) => repo().snapshots.entries(ids[0]!, { prefix: 'x/', cursor, limit: 2 }), 2);
      expect(pins).toStrictEqual(['x/1', 'x/2', 'x/3', 'x/5'].map((p) => pinOf(records.find((r) => r.path === p)!)));
      expect((await repo().snapshots.entries(ids[0]!, { limit: 100 })).items).toHaveLength(6);

      const listed = await collectAll((cursor) => repo().snapshots.list(PROJECT, { cursor, limit: 2 }), 2);
      expect(listed.map((s) => s.seq)).toStrictEqual([5, 4, 3, 2, 1]);
      expect(listed.map((s) => s.snapshotId)).toStrictEqual([...ids].reverse());
      expect(await repo().snapshots.list(OTHER_PROJECT, { limit: 2 })).toStrictEqual({ items: [] });
      await expectStrataError(repo().snapshots.entries(uuidFor(404), { limit: 2 }), 'SNAPSHOT_NOT_FOUND');
    });

    it('tags are unique per project and listed on their snapshot', async () => {
      const s1 = await repo().snapshots.create(snapshotInput(1));
      const s2 = await repo().snapshots.create(snapshotInput(2));
      await repo().snapshots.addTag(PROJECT, s1.snapshotId, 'v1.0');
      await repo().snapshots.addTag(PROJECT, s1.snapshotId, 'accepted');
      await repo().snapshots.addTag(PROJECT, s2.snapshotId, 'v2.0');
      const taken = await expectStrataError(repo().snapshots.addTag(PROJECT, s2.snapshotId, 'v1.0'), 'TAG_TAKEN', {
        tag: 'v1.0',
      });
      expect(taken.message).toBe('The tag is already used in this project');
      await expectStrataError(repo().snapshots.addTag(PROJECT, s1.snapshotId, 'v1.0'), 'TAG_TAKEN');
      await expectStrataError(repo().snapshots.addTag(PROJECT, uuidFor(404), 'nope'), 'SNAPSHOT_NOT_FOUND');

      expect(await repo().snapshots.listTags(PROJECT)).toStrictEqual([
        { tag: 'accepted', snapshotId: s1.snapshotId },
        { tag: 'v1.0', snapshotId: s1.snapshotId },
        { tag: 'v2.0', snapshotId: s2.snapshotId },
      ]);
      expect((await repo().snapshots.get(PROJECT, s1.snapshotId))?.tags).toStrictEqual(['accepted', 'v1.0']);
      expect((await repo().snapshots.list(PROJECT, { limit: 10 })).items.map((s) => s.tags)).toStrictEqual([
        ['v2.0'],
        ['accepted', 'v1.0'],
      ]);
      expect((await repo().snapshots.tip(PROJECT))?.tags).toStrictEqual(['v2.0']);
      expect(await repo().snapshots.resolveTag(PROJECT, 'v1.0')).toStrictEqual({ ...s1, tags: ['accepted', 'v1.0'] });
      expect(await repo().snapshots.resolveTag(PROJECT, 'missing')).toBeNull();
      expect(await repo().snapshots.resolveTag(OTHER_PROJECT, 'v1.0')).toBeNull();

      // the same tag in another project is fine
      const other = await repo().snapshots.create(snapshotInput(1, OTHER_PROJECT));
      await repo().snapshots.addTag(OTHER_PROJECT, other.snapshotId, 'v1.0');

      expect(await repo().snapshots.removeTag(PROJECT, 'v1.0')).toBe(true);
      expect(await repo().snapshots.removeTag(PROJECT, 'v1.0')).toBe(false);
      expect(await repo().snapshots.resolveTag(PROJECT, 'v1.0')).toBeNull();
      expect((await repo().snapshots.resolveTag(OTHER_PROJECT, 'v1.0'))?.snapshotId).toBe(other.snapshotId);
      // a removed tag can be used again
      await repo().snapshots.addTag(PROJECT, s2.snapshotId, 'v1.0');
      expect((await repo().snapshots.get(PROJECT, s2.snapshotId))?.tags).toStrictEqual(['v1.0', 'v2.0']);
    });
  });
}
