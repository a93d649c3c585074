import { describe, expect, it } from 'vitest';
import type { ContentHash } from '../../engine/types.js';
import {
  ACTOR,
  at,
  commitAll,
  hashOf,
  OTHER_PROJECT,
  PROJECT,
  type RepositoryGetter,
  recordMaker,
  uuidFor,
} from './metadata-repository-fixtures.js';

const sorted = (hashes: Iterable<ContentHash>): ContentHash[] => [...hashes].sort();

export function pruneConformance(repo: RepositoryGetter): void {
  describe('versions.prune and references', () => {
    it('keep = 0 means unlimited: nothing is pruned', async () => {
      const make = recordMaker();
      await commitAll(repo(), [make.write('f', '1'), make.write('f', '2'), make.write('f', '3')]);
      expect(await repo().versions.prune(PROJECT, { keep: 0 })).toStrictEqual({ prunedVersions: 0, prunedBytes: 0, releasedHashes: [] });
      expect(await repo().versions.countVersions(PROJECT)).toBe(3);
    });

    it('keeps the newest versions of each path and returns the released hashes once each', async () => {
      const make = recordMaker();
      const f = await commitAll(repo(), [
        make.write('f', 'v1'),
        make.write('f', 'same'),
        make.write('f', 'same'),
        make.remove('f'),
        make.write('f', 'v5'),
        make.write('f', 'v6'),
      ]);
      const g = await commitAll(repo(), [make.write('g', 'g1'), make.write('g', 'g2')]);
      const result = await repo().versions.prune(PROJECT, { keep: 2 });
      expect(result.prunedVersions).toBe(4);
      // v1 (2 bytes), same and same (4 each), the tombstone (0)
      expect(result.prunedBytes).toBe(10);
      expect(sorted(result.releasedHashes)).toStrictEqual(sorted([hashOf('v1'), hashOf('same')]));
      const history = await repo().versions.history(PROJECT, { path: 'f', limit: 10 });
      expect(history.items).toStrictEqual([f[5], f[4]]);
      expect((await repo().versions.history(PROJECT, { path: 'g', limit: 10 })).items).toStrictEqual([g[1], g[0]]);
      expect(await repo().versions.get(PROJECT, f[3]!.versionId)).toBeNull();
      // pruning again finds nothing more
      expect(await repo().versions.prune(PROJECT, { keep: 2 })).toStrictEqual({ prunedVersions: 0, prunedBytes: 0, releasedHashes: [] });
    });

    it('never prunes a version pinned by a snapshot, nor the current one', async () => {
      const make = recordMaker();
      const v = await commitAll(repo(), [make.write('f', 'v1'), make.write('f', 'v2')]);
      await repo().snapshots.create({ snapshotId: uuidFor(1, 9), projectId: PROJECT, message: 's', actor: ACTOR, timestamp: at(100) });
      const later = await commitAll(repo(), [make.write('f', 'v3'), make.write('f', 'v4'), make.write('f', 'v5')]);
      const result = await repo().versions.prune(PROJECT, { keep: 1 });
      expect(result.prunedVersions).toBe(3);
      expect(sorted(result.releasedHashes)).toStrictEqual(sorted([hashOf('v1'), hashOf('v3'), hashOf('v4')]));
      const left = (await repo().versions.history(PROJECT, { path: 'f', limit: 10 })).items;
      expect(left).toStrictEqual([later[2], v[1]]);
      expect((await repo().versions.getEntry(PROJECT, 'f'))?.versionId).toBe(later[2]!.versionId);
      const pinned = await repo().snapshots.entries(uuidFor(1, 9), { limit: 10 });
      expect(pinned.items).toStrictEqual([{ path: 'f', versionId: v[1]!.versionId, contentHash: hashOf('v2'), size: 2, executable: false, symlink: false, dataset: false }]);
    });

    it('prunes only the given paths', async () => {
      const make = recordMaker();
      await commitAll(repo(), [make.write('a', 'a1'), make.write('a', 'a2'), make.write('b', 'b1'), make.write('b', 'b2')]);
      await commitAll(repo(), [make.write('c', 'c1'), make.write('c', 'c2')]);
      const result = await repo().versions.prune(PROJECT, { keep: 1, paths: ['a', 'c', 'missing'] });
      expect(result.prunedVersions).toBe(2);
      expect(sorted(result.releasedHashes)).toStrictEqual(sorted([hashOf('a1'), hashOf('c1')]));
      expect(await repo().versions.countVersions(PROJECT)).toBe(4);
      expect((await repo().versions.history(PROJECT, { path: 'b', limit: 10 })).items).toHaveLength(2);
    });

    it('prunes only the given project', async () => {
      const mine = recordMaker(PROJECT);
      const theirs = recordMaker(OTHER_PROJECT);
      await commitAll(repo(), [mine.write('f', '1'), mine.write('f', '2'), theirs.write('f', '1'), theirs.write('f', '2')]);
      expect((await repo().versions.prune(PROJECT, { keep: 1 })).prunedVersions).toBe(1);
      expect(await repo().versions.countVersions(OTHER_PROJECT)).toBe(2);
    });

    it('reports which hashes are still referenced, by versions or by snapshots', async () => {
      const make = recordMaker();
      await commitAll(repo(), [make.write('f', 'old'), make.write('f', 'kept'), make.write('g', 'pinned')]);
      await repo().snapshots.create({ snapshotId: uuidFor(1, 9), projectId: PROJECT, message: '', actor: ACTOR, timestamp: at(50) });
      await commitAll(repo(), [make.remove('g'), make.write('h', 'new')]);
      const { releasedHashes } = await repo().versions.prune(PROJECT, { keep: 1 });
      // 'g' pinned stays; only f's old version goes
      expect(releasedHashes).toStrictEqual([hashOf('old')]);
      const unknown = Array.from({ length: 1_200 }, (_, i) => hashOf(`unknown ${i}`));
      const asked = [...unknown.slice(0, 600), hashOf('old'), hashOf('kept'), hashOf('pinned'), hashOf('new'), ...unknown.slice(600)];
      const referenced = await repo().versions.referencedHashes(asked);
      expect(sorted(referenced)).toStrictEqual(sorted([hashOf('kept'), hashOf('pinned'), hashOf('new')]));
      expect(await repo().versions.referencedHashes([])).toStrictEqual(new Set());
    });

    it('streams every referenced hash once', async () => {
      const make = recordMaker();
      // more than one page of a paged implementation, with duplicates and tombstones
      const records = Array.from({ length: 2_100 }, (_, i) => (i % 500 === 499 ? make.remove(`f${i % 50}`) : make.write(`f${i % 50}`, `c${i % 1_500}`)));
      await commitAll(repo(), records);
      const expected = new Set(records.flatMap((r) => (r.contentHash === null ? [] : [r.contentHash])));
      const streamed: ContentHash[] = [];
      for await (const hash of repo().versions.allReferencedHashes()) {
        streamed.push(hash);
        // other calls keep working while the stream is open
        if (streamed.length === 1) expect(await repo().versions.countVersions(PROJECT)).toBe(2_100);
      }
      expect(streamed).toHaveLength(expected.size);
      expect(sorted(streamed)).toStrictEqual(sorted(expected));
    });

    it("streams one project's references, its datasets' shards included, and nothing of another project", async () => {
      const make = recordMaker();
      const other = recordMaker(OTHER_PROJECT);
      // more than one page, with repeated contents and tombstones
      const mine = Array.from({ length: 1_300 }, (_, i) => (i % 400 === 399 ? make.remove(`f${i % 30}`) : make.write(`f${i % 30}`, `mine ${i % 900}`)));
      await commitAll(repo(), mine);
      const shards = [hashOf('shard a'), hashOf('shard b')];
      const manifest = make.write('data.h5', 'manifest', { dataset: true });
      const again = make.write('copy.h5', 'manifest', { dataset: true });
      const results = await repo().versions.commit([{ record: manifest, shards }, { record: again, shards }]);
      expect(results.every((r) => r.ok)).toBe(true);
      await commitAll(repo(), [other.write('g', 'theirs'), other.write('h', 'mine 1')]);

      const streamed = new Set<ContentHash>();
      let count = 0;
      for await (const hash of repo().versions.projectReferencedHashes(PROJECT)) {
        streamed.add(hash);
        count += 1;
        if (count === 1) expect(await repo().versions.countVersions(PROJECT)).toBe(1_302);
      }
      const expected = new Set([...mine.flatMap((r) => (r.contentHash === null ? [] : [r.contentHash])), hashOf('manifest'), ...shards]);
      expect(sorted(streamed)).toStrictEqual(sorted(expected));
      expect(streamed.has(hashOf('theirs'))).toBe(false);
      // shards are listed once per manifest, not once per version of it
      expect(count).toBeLessThanOrEqual(mine.length + 2 + shards.length);
      const theirs: ContentHash[] = [];
      for await (const hash of repo().versions.projectReferencedHashes(OTHER_PROJECT)) theirs.push(hash);
      expect(sorted(theirs)).toStrictEqual(sorted([hashOf('theirs'), hashOf('mine 1')]));
    });
  });
}
