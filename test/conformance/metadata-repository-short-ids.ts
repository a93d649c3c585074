import { describe, expect, it } from 'vitest';
import { ACTOR, at, commitAll, OTHER_PROJECT, PROJECT, type RepositoryGetter, recordMaker, uuidFor } from './metadata-repository-fixtures.js';

// Short ids (versions.matchIds, snapshots.matchIds) and retention's dry run (versions.previewPrune).

const A = '01936f2a-0001-7000-8000-aaaaaa111111';
const B = '01936f2a-0001-7000-8000-bbbbbb111111';
const C = '01936f2b-0001-7000-8000-cccccc222222';
const D = '01936f2a-0009-7000-8000-dddddd333333';

export function shortIdConformance(repo: RepositoryGetter): void {
  describe('versions.matchIds and snapshots.matchIds', () => {
    it('finds version ids by prefix or ending, in id order, within the project only', async () => {
      const make = recordMaker();
      await commitAll(repo(), [make.write('a', '1', { versionId: B }), make.write('b', '2', { versionId: A }), make.write('c', '3', { versionId: C })]);
      await commitAll(repo(), [recordMaker(OTHER_PROJECT).write('d', '4', { versionId: D })]);
      const match = repo().versions.matchIds;
      expect(await match(PROJECT, { prefix: '01936f2a' }, 10)).toStrictEqual([A, B]);
      expect(await match(PROJECT, { prefix: '01936f2a' }, 1)).toStrictEqual([A]);
      expect(await match(PROJECT, { prefix: '01936f2b-0001' }, 10)).toStrictEqual([C]);
      expect(await match(PROJECT, { prefix: A }, 10)).toStrictEqual([A]);
      expect(await match(PROJECT, { suffix: '111111' }, 10)).toStrictEqual([A, B]);
      expect(await match(PROJECT, { suffix: 'aa111111' }, 10)).toStrictEqual([A]);
      expect(await match(PROJECT, { suffix: '8000-cccccc222222' }, 10)).toStrictEqual([C]);
      expect(await match(PROJECT, { prefix: 'ffffff' }, 10)).toStrictEqual([]);
      // another project's id is not this project's, by either end
      expect(await match(PROJECT, { suffix: 'dddddd333333' }, 10)).toStrictEqual([]);
      expect(await match(PROJECT, { prefix: '01936f2a-0009' }, 10)).toStrictEqual([]);
      expect(await match(OTHER_PROJECT, { suffix: '333333' }, 10)).toStrictEqual([D]);
      // a prefix range ends where the text does: '01936f2a-0001-7000-8000-a' does not take 'b…'
      expect(await match(PROJECT, { prefix: '01936f2a-0001-7000-8000-a' }, 10)).toStrictEqual([A]);
    });

    it('finds snapshot ids the same way', async () => {
      const make = recordMaker();
      await commitAll(repo(), [make.write('a', '1')]);
      for (const [n, snapshotId] of [
        [1, B],
        [2, A],
      ] as const) {
        await repo().snapshots.create({ snapshotId, projectId: PROJECT, message: `s${n}`, actor: ACTOR, timestamp: at(100 + n) });
      }
      expect(await repo().snapshots.matchIds(PROJECT, { suffix: '111111' }, 10)).toStrictEqual([A, B]);
      expect(await repo().snapshots.matchIds(PROJECT, { prefix: '01936f2a-0001-7000-8000-bb' }, 10)).toStrictEqual([B]);
      expect(await repo().snapshots.matchIds(OTHER_PROJECT, { suffix: '111111' }, 10)).toStrictEqual([]);
      // version ids are not snapshot ids
      expect(await repo().versions.matchIds(PROJECT, { suffix: '111111' }, 10)).toStrictEqual([]);
    });

    it('refuses a limit out of range', async () => {
      for (const limit of [0, -1, 1.5, 101]) {
        await expect(repo().versions.matchIds(PROJECT, { prefix: '019' }, limit)).rejects.toBeInstanceOf(TypeError);
      }
    });
  });

  describe('versions.previewPrune', () => {
    it('reports what prune would delete, per path, and deletes nothing', async () => {
      const make = recordMaker();
      // f: 6 versions (keep 2 prunes v1, same, same, the tombstone: 10 bytes); g: 3 of 1,000 bytes; h: 1
      await commitAll(repo(), [make.write('f', 'v1'), make.write('f', 'same'), make.write('f', 'same'), make.remove('f'), make.write('f', 'v5'), make.write('f', 'v6')]);
      await commitAll(repo(), [make.write('g', 'x'.repeat(1000)), make.write('g', 'y'.repeat(1000)), make.write('g', 'z'.repeat(1000))]);
      await commitAll(repo(), [make.write('h', 'only')]);
      const preview = await repo().versions.previewPrune(PROJECT, { keep: 2, top: 10 });
      expect(preview).toStrictEqual({
        versions: 5,
        bytes: 1010,
        pathCount: 2,
        paths: [
          { path: 'g', versions: 1, bytes: 1000 },
          { path: 'f', versions: 4, bytes: 10 },
        ],
      });
      expect(await repo().versions.countVersions(PROJECT)).toBe(10);
      expect((await repo().versions.previewPrune(PROJECT, { keep: 2, top: 1 })).paths).toStrictEqual([{ path: 'g', versions: 1, bytes: 1000 }]);
      expect(await repo().versions.previewPrune(PROJECT, { keep: 0, top: 10 })).toStrictEqual({ versions: 0, bytes: 0, pathCount: 0, paths: [] });
      const pruned = await repo().versions.prune(PROJECT, { keep: 2 });
      expect([pruned.prunedVersions, pruned.prunedBytes]).toStrictEqual([preview.versions, preview.bytes]);
      expect(await repo().versions.previewPrune(PROJECT, { keep: 2, top: 10 })).toStrictEqual({ versions: 0, bytes: 0, pathCount: 0, paths: [] });
    });

    it('counts neither pinned nor current versions, nor those under a sync hold', async () => {
      const make = recordMaker();
      await commitAll(repo(), [make.write('f', 'v1'), make.write('f', 'v2')]);
      await repo().snapshots.create({ snapshotId: uuidFor(1, 9), projectId: PROJECT, message: 's', actor: ACTOR, timestamp: at(100) });
      await commitAll(repo(), [make.write('f', 'v3'), make.write('f', 'v4'), make.write('f', 'v5')]);
      // v2 is pinned, v5 current: v1, v3, v4 (2 bytes each)
      expect(await repo().versions.previewPrune(PROJECT, { keep: 1, top: 5 })).toStrictEqual({ versions: 3, bytes: 6, pathCount: 1, paths: [{ path: 'f', versions: 3, bytes: 6 }] });
      // a hold at position 0: nothing made here is pushed yet, so nothing may go
      expect(await repo().versions.previewPrune(PROJECT, { keep: 1, holdAfterSeq: 0, top: 5 })).toStrictEqual({ versions: 0, bytes: 0, pathCount: 0, paths: [] });
      const pruned = await repo().versions.prune(PROJECT, { keep: 1 });
      expect([pruned.prunedVersions, pruned.prunedBytes]).toStrictEqual([3, 6]);
    });
  });
}
