import { describe, expect, it } from 'vitest';
import { commitAll, OTHER_PROJECT, PROJECT, type RepositoryGetter, recordMaker, SERVICE } from './metadata-repository-fixtures.js';

// versions.renameSource (`strata history --follow`): a rename is a tombstone at the old path and,
// next in the project's commit order, a write of the same content by the same actor at the new one.

export function renameConformance(repo: RepositoryGetter): void {
  describe('versions.renameSource', () => {
    it('finds the tombstone and the old version a rename made a version from, within the project', async () => {
      const make = recordMaker();
      const other = recordMaker(OTHER_PROJECT);
      const [old] = await commitAll(repo(), [make.write('draft.md', 'text')]);
      const [tombstone, moved] = [make.remove('draft.md'), make.write('paper/final.md', 'text')];
      await repo().versions.commit([{ record: tombstone! }], { atomic: true });
      // another project commits in between: the rename is still next in this project's order
      await commitAll(repo(), [other.write('x', 'x')]);
      await commitAll(repo(), [moved!]);
      expect(await repo().versions.renameSource(PROJECT, moved!.versionId)).toStrictEqual({ tombstone, source: old });
      // the tombstone, the old version and a first write were not made by a rename
      for (const record of [tombstone!, old!]) expect(await repo().versions.renameSource(PROJECT, record.versionId)).toBeNull();
      expect(await repo().versions.renameSource(PROJECT, '01936f2a-ffff-7000-8000-000000000000')).toBeNull();
      expect(await repo().versions.renameSource(OTHER_PROJECT, moved!.versionId)).toBeNull();
    });

    it('finds each pair of many renames committed at once (engine renameFiles: a directory moved)', async () => {
      const make = recordMaker();
      const sources = await commitAll(repo(), [1, 2, 3].map((n) => make.write(`big/f${n}.dat`, `data ${n}`)));
      const pairs = [1, 2, 3].map((n) => [make.remove(`big/f${n}.dat`)!, make.write(`big2/f${n}.dat`, `data ${n}`)!] as const);
      await repo().versions.commit(
        pairs.flatMap(([tombstone, moved]) => [{ record: tombstone }, { record: moved }]),
        { atomic: true },
      );
      for (const [i, [tombstone, moved]] of pairs.entries()) {
        expect(await repo().versions.renameSource(PROJECT, moved.versionId)).toStrictEqual({ tombstone, source: sources[i] });
      }
    });

    it('is not a rename: other content, another actor, or another commit in between', async () => {
      const make = recordMaker();
      await commitAll(repo(), [make.write('a', 'same'), make.write('b', 'same'), make.write('c', 'same')]);
      const changed = await commitAll(repo(), [make.remove('a'), make.write('a2', 'other')]);
      const byOther = await commitAll(repo(), [make.remove('b'), make.write('b2', 'same', { actor: SERVICE })]);
      const apart = await commitAll(repo(), [make.remove('c'), make.write('unrelated', 'u'), make.write('c2', 'same')]);
      for (const record of [changed[1]!, byOther[1]!, apart[2]!]) expect(await repo().versions.renameSource(PROJECT, record.versionId)).toBeNull();
    });
  });
}
