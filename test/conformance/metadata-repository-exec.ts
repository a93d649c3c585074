import { describe, expect, it } from 'vitest';
import type { Entry, VersionRecord } from '../../engine/types.js';
import { commitAll, PROJECT, type RepositoryGetter, recordMaker } from './metadata-repository-fixtures.js';
import { pinOf, snapshotInput } from './metadata-repository-snapshots.js';

function entryOf(record: VersionRecord): Entry {
  return { ...pinOf(record), timestamp: record.timestamp };
}

/** The exec bit (schema migration 2) is part of a version, its entry, its pins and tree comparisons. */
export function execBitConformance(repo: RepositoryGetter): void {
  describe('exec bit', () => {
    it('round-trips on versions, entries, history and snapshot entries', async () => {
      const make = recordMaker();
      const [script, data] = await commitAll(repo(), [make.write('run.sh', '#!/bin/sh', { executable: true }), make.write('data.csv', '1,2')]);
      expect((await repo().versions.get(PROJECT, script!.versionId))?.executable).toBe(true);
      expect((await repo().versions.get(PROJECT, data!.versionId))?.executable).toBe(false);
      expect(await repo().versions.getEntry(PROJECT, 'run.sh')).toStrictEqual(entryOf(script!));
      expect((await repo().versions.getEntry(PROJECT, 'run.sh'))?.executable).toBe(true);
      const listed = await repo().versions.listEntries(PROJECT, { prefix: '', limit: 10 });
      expect(listed.items.map((e) => [e.path, e.executable])).toStrictEqual([
        ['data.csv', false],
        ['run.sh', true],
      ]);
      const history = await repo().versions.history(PROJECT, { path: 'run.sh', limit: 10 });
      expect(history.items[0]).toStrictEqual(script);
      const snapshot = await repo().snapshots.create(snapshotInput(1));
      const pins = await repo().snapshots.entries(snapshot.snapshotId, { limit: 10 });
      expect(pins.items).toStrictEqual([pinOf(data!), pinOf(script!)]);
      expect(pins.items[1]!.executable).toBe(true);
    });

    it('a chmod (same content, other bit) updates the entry and is a modification in diffs and restore plans', async () => {
      const make = recordMaker();
      const [plain] = await commitAll(repo(), [make.write('tool', 'echo hi')]);
      const from = await repo().snapshots.create(snapshotInput(1));
      const [chmodded] = await commitAll(repo(), [make.write('tool', 'echo hi', { executable: true })]);
      expect((await repo().versions.getEntry(PROJECT, 'tool'))?.executable).toBe(true);
      const to = await repo().snapshots.create(snapshotInput(2));
      const expected = [{ path: 'tool', change: 'modified', before: pinOf(plain!), after: pinOf(chmodded!) }];
      expect(await repo().snapshots.diff(PROJECT, from.snapshotId, to.snapshotId)).toStrictEqual(expected);
      expect(await repo().snapshots.diff(PROJECT, from.snapshotId, null)).toStrictEqual(expected);
      expect(await repo().snapshots.restorePlan(PROJECT, from.snapshotId)).toStrictEqual([
        { path: 'tool', current: entryOf(chmodded!), pinned: pinOf(plain!) },
      ]);
      // back to the same bit and bytes as `from`: no difference left
      await commitAll(repo(), [make.write('tool', 'echo hi')]);
      expect(await repo().snapshots.diff(PROJECT, from.snapshotId, null)).toStrictEqual([]);
    });

    it('a tombstone is never executable', async () => {
      const make = recordMaker();
      await commitAll(repo(), [make.write('x', 'x', { executable: true })]);
      const [gone] = await commitAll(repo(), [make.remove('x')]);
      expect((await repo().versions.get(PROJECT, gone!.versionId))?.executable).toBe(false);
      expect(await repo().versions.getEntry(PROJECT, 'x')).toBeNull();
    });
  });
}
