import { describe, expect, it } from 'vitest';
import type { Entry, VersionRecord } from '../../engine/types.js';
import {
  commitAll,
  expectStrataError,
  PROJECT,
  type RepositoryGetter,
  recordMaker,
  uuidFor,
} from './metadata-repository-fixtures.js';
import { pinOf, snapshotInput } from './metadata-repository-snapshots.js';

function entryOf(record: VersionRecord): Entry {
  return { ...pinOf(record), timestamp: record.timestamp };
}

export function diffConformance(repo: RepositoryGetter): void {
  describe('snapshots.diff and restorePlan', () => {
    it('diffs two snapshots by content: added, removed, modified, in path order', async () => {
      const make = recordMaker();
      const before = await commitAll(repo(), [
        make.write('same', 's'),
        make.write('edited', 'e1'),
        make.write('removed', 'r'),
        make.write('rewritten', 'w'),
        make.write('z/moved', 'm'),
      ]);
      const from = await repo().snapshots.create(snapshotInput(1));
      const after = await commitAll(repo(), [
        make.write('edited', 'e2'),
        make.remove('removed'),
        // a new version with the same bytes is not a modification
        make.write('rewritten', 'w'),
        make.remove('z/moved'),
        make.write('a/moved', 'm'),
        make.write('added', 'new'),
      ]);
      const to = await repo().snapshots.create(snapshotInput(2));
      const expected = [
        { path: 'a/moved', change: 'added', before: null, after: pinOf(after[4]!) },
        { path: 'added', change: 'added', before: null, after: pinOf(after[5]!) },
        { path: 'edited', change: 'modified', before: pinOf(before[1]!), after: pinOf(after[0]!) },
        { path: 'removed', change: 'removed', before: pinOf(before[2]!), after: null },
        { path: 'z/moved', change: 'removed', before: pinOf(before[4]!), after: null },
      ];
      expect(await repo().snapshots.diff(PROJECT, from.snapshotId, to.snapshotId)).toStrictEqual(expected);
      // against the current tree, which equals `to` here
      expect(await repo().snapshots.diff(PROJECT, from.snapshotId, null)).toStrictEqual(expected);
      expect(await repo().snapshots.diff(PROJECT, to.snapshotId, null)).toStrictEqual([]);
      expect(await repo().snapshots.diff(PROJECT, to.snapshotId, to.snapshotId)).toStrictEqual([]);
      // and backwards
      const backwards = await repo().snapshots.diff(PROJECT, to.snapshotId, from.snapshotId);
      expect(backwards.map((d) => [d.path, d.change])).toStrictEqual([
        ['a/moved', 'removed'],
        ['added', 'removed'],
        ['edited', 'modified'],
        ['removed', 'added'],
        ['z/moved', 'added'],
      ]);
    });

    it('diff against the current tree sees changes since the snapshot', async () => {
      const make = recordMaker();
      const [kept] = await commitAll(repo(), [make.write('kept', 'k')]);
      const snapshot = await repo().snapshots.create(snapshotInput(1));
      const [changed] = await commitAll(repo(), [make.write('kept', 'k2')]);
      expect(await repo().snapshots.diff(PROJECT, snapshot.snapshotId, null)).toStrictEqual([
        { path: 'kept', change: 'modified', before: pinOf(kept!), after: pinOf(changed!) },
      ]);
    });

    it('rejects unknown snapshots', async () => {
      const s = await repo().snapshots.create(snapshotInput(1));
      await expectStrataError(repo().snapshots.diff(PROJECT, uuidFor(404), null), 'SNAPSHOT_NOT_FOUND');
      await expectStrataError(repo().snapshots.diff(PROJECT, s.snapshotId, uuidFor(404)), 'SNAPSHOT_NOT_FOUND');
      await expectStrataError(repo().snapshots.restorePlan(PROJECT, uuidFor(404)), 'SNAPSHOT_NOT_FOUND');
      const other = await repo().snapshots.create(snapshotInput(1, '01936f2a-0000-7000-8000-00000000a002'));
      await expectStrataError(repo().snapshots.diff(PROJECT, other.snapshotId, null), 'SNAPSHOT_NOT_FOUND');
    });

    it('plans a restore: only paths whose content differs, both sides given', async () => {
      const make = recordMaker();
      const pinned = await commitAll(repo(), [
        make.write('unchanged', 'u'),
        make.write('modified', 'm1'),
        make.write('deleted-since', 'd'),
        make.write('same-bytes', 'b'),
        make.write('deleted-and-back', 'x'),
      ]);
      const snapshot = await repo().snapshots.create(snapshotInput(1));
      expect(await repo().snapshots.restorePlan(PROJECT, snapshot.snapshotId)).toStrictEqual([]);
      const now = await commitAll(repo(), [
        make.write('modified', 'm2'),
        make.remove('deleted-since'),
        make.write('created-since', 'c'),
        make.write('same-bytes', 'b'),
        make.remove('deleted-and-back'),
        make.write('deleted-and-back', 'x'),
      ]);
      expect(await repo().snapshots.restorePlan(PROJECT, snapshot.snapshotId)).toStrictEqual([
        { path: 'created-since', current: entryOf(now[2]!), pinned: null },
        { path: 'deleted-since', current: null, pinned: pinOf(pinned[2]!) },
        { path: 'modified', current: entryOf(now[0]!), pinned: pinOf(pinned[1]!) },
      ]);
    });
  });
}
