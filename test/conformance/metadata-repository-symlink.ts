import { describe, expect, it } from 'vitest';
import type { Entry, VersionRecord } from '../../engine/types.js';
import { commitAll, PROJECT, type RepositoryGetter, recordMaker } from './metadata-repository-fixtures.js';
import { pinOf, snapshotInput } from './metadata-repository-snapshots.js';

function entryOf(record: VersionRecord): Entry {
  return { ...pinOf(record), timestamp: record.timestamp };
}

/** The symlink flag (schema migration 9) is part of a version, its entry, its pins, the change feed and tree comparisons. */
export function symlinkConformance(repo: RepositoryGetter): void {
  describe('symbolic links', () => {
    it('round-trip on versions, entries, history, snapshot entries and the change feed', async () => {
      const make = recordMaker();
      const [link, file] = await commitAll(repo(), [make.write('latest', 'runs/7', { symlink: true }), make.write('runs/7', 'data')]);
      expect((await repo().versions.get(PROJECT, link!.versionId))?.symlink).toBe(true);
      expect((await repo().versions.get(PROJECT, file!.versionId))?.symlink).toBe(false);
      expect(await repo().versions.getEntry(PROJECT, 'latest')).toStrictEqual(entryOf(link!));
      const listed = await repo().versions.listEntries(PROJECT, { prefix: '', limit: 10 });
      expect(listed.items.map((e) => [e.path, e.symlink])).toStrictEqual([
        ['latest', true],
        ['runs/7', false],
      ]);
      expect((await repo().versions.history(PROJECT, { path: 'latest', limit: 10 })).items[0]).toStrictEqual(link);
      const snapshot = await repo().snapshots.create(snapshotInput(1));
      const pins = await repo().snapshots.entries(snapshot.snapshotId, { limit: 10 });
      expect(pins.items).toStrictEqual([pinOf(link!), pinOf(file!)]);
      const feed = await repo().versions.changesAfter(PROJECT, 0, 10);
      expect(feed.items.map((item) => [item.path, item.symlink])).toStrictEqual([
        ['latest', true],
        ['runs/7', false],
      ]);
    });

    it('a file replaced by a link with the same bytes is a modification in diffs and restore plans', async () => {
      const make = recordMaker();
      const [plain] = await commitAll(repo(), [make.write('x', 'target')]);
      const from = await repo().snapshots.create(snapshotInput(1));
      const [link] = await commitAll(repo(), [make.write('x', 'target', { symlink: true })]);
      expect(link!.contentHash).toBe(plain!.contentHash);
      const to = await repo().snapshots.create(snapshotInput(2));
      const expected = [{ path: 'x', change: 'modified', before: pinOf(plain!), after: pinOf(link!) }];
      expect(await repo().snapshots.diff(PROJECT, from.snapshotId, to.snapshotId)).toStrictEqual(expected);
      expect(await repo().snapshots.diff(PROJECT, from.snapshotId, null)).toStrictEqual(expected);
      expect(await repo().snapshots.restorePlan(PROJECT, from.snapshotId)).toStrictEqual([{ path: 'x', current: entryOf(link!), pinned: pinOf(plain!) }]);
      const changes = await repo().snapshots.changesFromParents(PROJECT, [to.snapshotId]);
      expect(changes[0]).toStrictEqual([{ path: 'x', after: pinOf(link!) }]);
      await commitAll(repo(), [make.write('x', 'target')]);
      expect(await repo().snapshots.diff(PROJECT, from.snapshotId, null)).toStrictEqual([]);
    });
  });
}
