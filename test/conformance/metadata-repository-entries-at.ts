// versions.entriesAt: the tree as it was at a moment (the history browser's "as of").
import { describe, expect, it } from 'vitest';
import { at, commitAll, expectStrataError, PROJECT, type RepositoryGetter, recordMaker } from './metadata-repository-fixtures.js';

export function entriesAtConformance(repo: RepositoryGetter): void {
  describe('versions.entriesAt', () => {
    it('gives each path its newest version by then; deleted and later paths are absent', async () => {
      const make = recordMaker();
      // The maker stamps record n at second n: a.m v1 (1), b.m (2), a.m v2 (3), b.m deleted (4), c.m (5)
      const a1 = make.write('src/a.m', 'a one');
      const b = make.write('src/b.m', 'b');
      const a2 = make.write('src/a.m', 'a two');
      const gone = make.remove('src/b.m');
      const c = make.write('src/deeper/c.m', 'c');
      await commitAll(repo(), [a1, b, a2, gone, c]);
      const paths = async (moment: string, prefix = '') => (await repo().versions.entriesAt(PROJECT, { prefix, at: moment, limit: 100 })).items.map((e) => [e.path, e.versionId]);
      expect(await paths(at(0))).toEqual([]);
      expect(await paths(at(2))).toEqual([
        ['src/a.m', a1.versionId],
        ['src/b.m', b.versionId],
      ]);
      expect(await paths(at(3))).toEqual([
        ['src/a.m', a2.versionId],
        ['src/b.m', b.versionId],
      ]);
      expect(await paths(at(5))).toEqual([
        ['src/a.m', a2.versionId],
        ['src/deeper/c.m', c.versionId],
      ]);
      expect(await paths(at(5), 'src/deeper/')).toEqual([['src/deeper/c.m', c.versionId]]);
      const entry = (await repo().versions.entriesAt(PROJECT, { prefix: '', at: at(3), limit: 100 })).items[0]!;
      expect(entry).toMatchObject({ path: 'src/a.m', contentHash: a2.contentHash, size: a2.size, timestamp: a2.timestamp, executable: false, symlink: false, dataset: false });
    });

    it('pages by paths in path order, and refuses a moment that is not a time', async () => {
      const make = recordMaker();
      await commitAll(repo(), ['p/1', 'p/2', 'p/3', 'p/4', 'p/5'].map((path) => make.write(path, path)));
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await repo().versions.entriesAt(PROJECT, { prefix: 'p/', at: at(100), limit: 2, ...(cursor === undefined ? {} : { cursor }) });
        seen.push(...page.items.map((e) => e.path));
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      expect(seen).toEqual(['p/1', 'p/2', 'p/3', 'p/4', 'p/5']);
      await expectStrataError(repo().versions.entriesAt(PROJECT, { prefix: '', at: 'yesterday', limit: 10 }), 'INVALID_ARGUMENT');
    });
  });
}
