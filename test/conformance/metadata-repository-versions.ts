import { describe, expect, it } from 'vitest';
import type { Entry, VersionRecord } from '../../engine/types.js';
import {
  collectAll,
  commitAll,
  hashOf,
  OTHER_PROJECT,
  pagesOf,
  PROJECT,
  type RepositoryGetter,
  recordMaker,
  SERVICE,
  uuidFor,
} from './metadata-repository-fixtures.js';

function entryOf(record: VersionRecord): Entry {
  return {
    path: record.path,
    versionId: record.versionId,
    contentHash: record.contentHash!,
    size: record.size,
    timestamp: record.timestamp,
    executable: record.executable,
    symlink: record.symlink,
    dataset: record.dataset,
  };
}

export function versionCommitConformance(repo: RepositoryGetter): void {
  describe('versions.commit', () => {
    it('commits a write: the record round-trips and becomes the current entry', async () => {
      const make = recordMaker();
      const record = make.write('src/main.m', 'x = 1;', { actor: SERVICE, kind: 'restore', restoredFrom: uuidFor(99) });
      const [result] = await repo().versions.commit([{ record }]);
      expect(result).toStrictEqual({ ok: true, entry: entryOf(record) });
      expect(await repo().versions.get(PROJECT, record.versionId)).toStrictEqual(record);
      expect(await repo().versions.getEntry(PROJECT, 'src/main.m')).toStrictEqual(entryOf(record));
      expect(await repo().versions.get(OTHER_PROJECT, record.versionId)).toBeNull();
      expect(await repo().versions.get(PROJECT, uuidFor(12345))).toBeNull();
      expect(await repo().versions.getEntry(PROJECT, 'src/other.m')).toBeNull();
    });

    it('checks preconditions in order; stale records are reported, the others commit', async () => {
      const make = recordMaker();
      const [a1, b1] = await commitAll(repo(), [make.write('a.py', 'a1'), make.write('b.py', 'b1')]);
      const a2 = make.write('a.py', 'a2');
      const bStale = make.write('b.py', 'b-stale');
      const cNew = make.write('c.py', 'c1');
      const aExists = make.write('a.py', 'a-must-not-exist');
      const a3 = make.write('a.py', 'a3');
      const free = make.write('d.py', 'd1');
      const results = await repo().versions.commit([
        { record: a2, expectedCurrent: a1!.versionId },
        { record: bStale, expectedCurrent: uuidFor(777) },
        { record: cNew, expectedCurrent: null },
        { record: aExists, expectedCurrent: null },
        // sees a2, committed earlier in this same batch
        { record: a3, expectedCurrent: a2.versionId },
        { record: free },
      ]);
      expect(results).toStrictEqual([
        { ok: true, entry: entryOf(a2) },
        { ok: false, code: 'STALE_BASE_VERSION', currentVersionId: b1!.versionId },
        { ok: true, entry: entryOf(cNew) },
        { ok: false, code: 'STALE_BASE_VERSION', currentVersionId: a2.versionId },
        { ok: true, entry: entryOf(a3) },
        { ok: true, entry: entryOf(free) },
      ]);
      expect(await repo().versions.get(PROJECT, bStale.versionId)).toBeNull();
      expect(await repo().versions.get(PROJECT, aExists.versionId)).toBeNull();
      expect((await repo().versions.getEntry(PROJECT, 'a.py'))?.versionId).toBe(a3.versionId);
      expect((await repo().versions.getEntry(PROJECT, 'b.py'))?.versionId).toBe(b1!.versionId);
      expect(await repo().versions.countVersions(PROJECT)).toBe(6);
    });

    it('reports a missing path as currentVersionId null', async () => {
      const make = recordMaker();
      const record = make.write('new.txt', 'n');
      const results = await repo().versions.commit([{ record, expectedCurrent: uuidFor(5) }]);
      expect(results).toStrictEqual([{ ok: false, code: 'STALE_BASE_VERSION', currentVersionId: null }]);
      expect(await repo().versions.countVersions(PROJECT)).toBe(0);
    });

    it('a batch that fails as a whole commits nothing', async () => {
      const make = recordMaker();
      const first = make.write('one.txt', '1');
      const duplicate = { ...make.write('two.txt', '2'), versionId: first.versionId };
      await expect(repo().versions.commit([{ record: first }, { record: duplicate }])).rejects.toThrow();
      expect(await repo().versions.getEntry(PROJECT, 'one.txt')).toBeNull();
      expect(await repo().versions.countVersions(PROJECT)).toBe(0);
    });

    it('an atomic batch commits wholly when every precondition holds', async () => {
      const make = recordMaker();
      const [a1] = await commitAll(repo(), [make.write('a', 'a1')]);
      const tombstone = make.remove('a');
      const moved = make.write('b', 'a1');
      const again = make.write('b', 'b2');
      const results = await repo().versions.commit(
        [
          { record: tombstone, expectedCurrent: a1!.versionId },
          { record: moved, expectedCurrent: null },
          // sees `moved`, earlier in the same batch
          { record: again, expectedCurrent: moved.versionId },
        ],
        { atomic: true },
      );
      expect(results).toStrictEqual([
        { ok: true, entry: null },
        { ok: true, entry: entryOf(moved) },
        { ok: true, entry: entryOf(again) },
      ]);
      expect(await repo().versions.countVersions(PROJECT)).toBe(4);
    });

    it('an atomic batch with one stale record commits nothing and reports every path', async () => {
      const make = recordMaker();
      const [a1, b1] = await commitAll(repo(), [make.write('a', 'a1'), make.write('b', 'b1')]);
      const results = await repo().versions.commit(
        [
          { record: make.remove('a'), expectedCurrent: a1!.versionId },
          { record: make.write('c', 'new'), expectedCurrent: null },
          // the rename target exists: stale
          { record: make.write('b', 'a1'), expectedCurrent: null },
        ],
        { atomic: true },
      );
      expect(results).toStrictEqual([
        { ok: false, code: 'STALE_BASE_VERSION', currentVersionId: a1!.versionId },
        { ok: false, code: 'STALE_BASE_VERSION', currentVersionId: null },
        { ok: false, code: 'STALE_BASE_VERSION', currentVersionId: b1!.versionId },
      ]);
      expect(await repo().versions.countVersions(PROJECT)).toBe(2);
      expect((await repo().versions.getEntry(PROJECT, 'a'))?.versionId).toBe(a1!.versionId);
      expect(await repo().versions.getEntry(PROJECT, 'c')).toBeNull();
    });

    it('an atomic batch reports committed state, not ids from its own rolled-back records', async () => {
      const make = recordMaker();
      const [a1] = await commitAll(repo(), [make.write('a', 'a1')]);
      const results = await repo().versions.commit(
        [{ record: make.write('a', 'a2') }, { record: make.write('a', 'a3'), expectedCurrent: a1!.versionId }],
        { atomic: true },
      );
      expect(results).toStrictEqual([
        { ok: false, code: 'STALE_BASE_VERSION', currentVersionId: a1!.versionId },
        { ok: false, code: 'STALE_BASE_VERSION', currentVersionId: a1!.versionId },
      ]);
      expect(await repo().versions.countVersions(PROJECT)).toBe(1);
    });

    it('a batch without preconditions: each record based on the one before it, tombstones, history only, shards', async () => {
      const make = recordMaker();
      const [v0] = await commitAll(repo(), [make.write('p.m', 'v0')]);
      const v1 = make.write('p.m', 'v1');
      const v2 = make.write('p.m', 'v2');
      const gone = make.remove('p.m');
      const v4 = make.write('p.m', 'v4');
      const history = make.write('h.m', 'history only');
      const other = make.write('q.m', 'q1');
      const data = make.write('big.bin', 'manifest', { dataset: true });
      const [shardA, shardB] = [hashOf('shard a'), hashOf('shard b')];
      const results = await repo().versions.commit([
        { record: v1 },
        { record: v2 },
        { record: gone },
        { record: history, historyOnly: true },
        { record: v4 },
        { record: other },
        { record: data, shards: [shardA, shardB, shardA] },
      ]);
      expect(results).toStrictEqual([
        { ok: true, entry: entryOf(v1) },
        { ok: true, entry: entryOf(v2) },
        { ok: true, entry: null },
        { ok: true, entry: null },
        { ok: true, entry: entryOf(v4) },
        { ok: true, entry: entryOf(other) },
        { ok: true, entry: entryOf(data) },
      ]);
      expect(await repo().versions.getEntry(PROJECT, 'p.m')).toStrictEqual(entryOf(v4));
      expect(await repo().versions.getEntry(PROJECT, 'h.m')).toBeNull();
      const { items } = await repo().versions.outboxAfter(PROJECT, 0, 100);
      // In input order, each with what was current when it was committed.
      expect(items.map((item) => [item.record.versionId, item.baseVersionId])).toStrictEqual([
        [v0!.versionId, null],
        [v1.versionId, v0!.versionId],
        [v2.versionId, v1.versionId],
        [gone.versionId, v2.versionId],
        [history.versionId, null],
        [v4.versionId, null],
        [other.versionId, null],
        [data.versionId, null],
      ]);
      expect(items.map((item) => item.seq)).toStrictEqual([...items.map((item) => item.seq)].sort((x, y) => x - y));
      expect(await repo().versions.referencedHashes([shardA, shardB, hashOf('never')])).toStrictEqual(new Set([shardA, shardB]));
    });

    it('refuses a record whose path must be checked where a directory is or below a file, judged with the records before it', async () => {
      const make = recordMaker();
      await commitAll(repo(), [make.write('dir/inside.m', 'd'), make.write('file.m', 'f'), make.write('gone.m', 'g')]);
      const atDirectory = make.write('dir', 'x');
      const belowFile = make.write('file.m/deeper/x.m', 'x');
      const unchecked = make.write('file.m/unchecked.m', 'u');
      const parent = make.write('fresh', 'p');
      const child = make.write('fresh/child.m', 'c');
      const deep = make.write('tree/a/b.m', 'b');
      const overDeep = make.write('tree/a', 'a');
      const removal = make.remove('gone.m');
      const intoRemoved = make.write('gone.m/now-a-directory.m', 'n');
      const results = await repo().versions.commit([
        { record: atDirectory, checkPath: true },
        { record: belowFile, checkPath: true },
        { record: unchecked },
        { record: parent, checkPath: true },
        { record: child, checkPath: true },
        { record: deep, checkPath: true },
        { record: overDeep, checkPath: true },
        { record: removal },
        { record: intoRemoved, checkPath: true },
      ]);
      expect(results).toStrictEqual([
        { ok: false, code: 'PATH_CONFLICT', conflict: { kind: 'directory' } },
        { ok: false, code: 'PATH_CONFLICT', conflict: { kind: 'file-ancestor', ancestor: 'file.m' } },
        // Not asked to check: committed as given (the mount and the watcher mirror a real tree).
        { ok: true, entry: entryOf(unchecked) },
        { ok: true, entry: entryOf(parent) },
        // The batch's own earlier records count: 'fresh' is a file by now, 'tree/a' a directory.
        { ok: false, code: 'PATH_CONFLICT', conflict: { kind: 'file-ancestor', ancestor: 'fresh' } },
        { ok: true, entry: entryOf(deep) },
        { ok: false, code: 'PATH_CONFLICT', conflict: { kind: 'directory' } },
        { ok: true, entry: null },
        // and so do deletions: gone.m is no longer a file.
        { ok: true, entry: entryOf(intoRemoved) },
      ]);
      expect(await repo().versions.getEntry(PROJECT, 'dir')).toBeNull();
      expect(await repo().versions.getEntry(PROJECT, 'fresh/child.m')).toBeNull();
      expect(await repo().versions.getEntry(PROJECT, 'tree/a')).toBeNull();
      expect(await repo().versions.get(PROJECT, belowFile.versionId)).toBeNull();
      expect((await repo().versions.history(PROJECT, { path: 'fresh/child.m', limit: 10 })).items).toStrictEqual([]);

      // With preconditions too.
      const conditionalBelow = make.write('file.m/conditional.m', 'c');
      const conditionalFree = make.write('elsewhere/conditional.m', 'c');
      expect(
        await repo().versions.commit([
          { record: conditionalBelow, expectedCurrent: null, checkPath: true },
          { record: conditionalFree, expectedCurrent: null, checkPath: true },
        ]),
      ).toStrictEqual([
        { ok: false, code: 'PATH_CONFLICT', conflict: { kind: 'file-ancestor', ancestor: 'file.m' } },
        { ok: true, entry: entryOf(conditionalFree) },
      ]);

      // An atomic batch with a refused record commits nothing and says why.
      const first = make.write('atomic/ok.m', 'o');
      const refused = make.write('file.m/atomic.m', 'r');
      expect(await repo().versions.commit([{ record: first }, { record: refused, checkPath: true }], { atomic: true })).toStrictEqual([
        { ok: false, code: 'STALE_BASE_VERSION', currentVersionId: null },
        { ok: false, code: 'PATH_CONFLICT', conflict: { kind: 'file-ancestor', ancestor: 'file.m' } },
      ]);
      expect(await repo().versions.getEntry(PROJECT, 'atomic/ok.m')).toBeNull();
    });

    it('a batch of distinct paths in two projects: each record judged against the committed tree, seqs in input order', async () => {
      // The shape of nearly every batch of writes (Postgres commits it in one statement, COMMIT_SET).
      const make = recordMaker();
      const theirs = recordMaker(OTHER_PROJECT);
      const [a1, b1, c1] = await commitAll(repo(), [make.write('a.txt', 'a1'), make.write('b.txt', 'b1'), make.write('c.txt', 'c1')]);
      const before = (await repo().versions.outboxAfter(PROJECT, 0, 100)).items.at(-1)!.seq;
      const a2 = make.write('a.txt', 'a2');
      const bStale = make.write('b.txt', 'b-stale');
      const cGone = make.remove('c.txt');
      const dNew = make.write('d.txt', 'd1');
      const bExists = make.write('e.txt', 'e1');
      const below = make.write('a.txt/inner.txt', 'x');
      const other = theirs.write('a.txt', 'theirs');
      const results = await repo().versions.commit([
        { record: a2, expectedCurrent: a1!.versionId },
        { record: bStale, expectedCurrent: uuidFor(4242) },
        { record: cGone, expectedCurrent: c1!.versionId },
        { record: dNew, expectedCurrent: null },
        { record: bExists },
        { record: below, checkPath: true },
        { record: other, expectedCurrent: null },
      ]);
      expect(results).toStrictEqual([
        { ok: true, entry: entryOf(a2) },
        { ok: false, code: 'STALE_BASE_VERSION', currentVersionId: b1!.versionId },
        { ok: true, entry: null },
        { ok: true, entry: entryOf(dNew) },
        { ok: true, entry: entryOf(bExists) },
        { ok: false, code: 'PATH_CONFLICT', conflict: { kind: 'file-ancestor', ancestor: 'a.txt' } },
        { ok: true, entry: entryOf(other) },
      ]);
      expect((await repo().versions.listEntries(PROJECT, { prefix: '', limit: 10 })).items).toStrictEqual([
        entryOf(a2),
        entryOf(b1!),
        entryOf(dNew),
        entryOf(bExists),
      ]);
      expect(await repo().versions.getEntry(OTHER_PROJECT, 'a.txt')).toStrictEqual(entryOf(other));
      const { items } = await repo().versions.outboxAfter(PROJECT, before, 100);
      expect(items.map((item) => [item.record.versionId, item.baseVersionId])).toStrictEqual([
        [a2.versionId, a1!.versionId],
        [cGone.versionId, c1!.versionId],
        [dNew.versionId, null],
        [bExists.versionId, null],
      ]);
      expect(items.map((item) => item.seq)).toStrictEqual([...items.map((item) => item.seq)].sort((x, y) => x - y));
      expect(await repo().versions.get(PROJECT, bStale.versionId)).toBeNull();
      expect(await repo().versions.get(PROJECT, below.versionId)).toBeNull();
    });

    it('an empty batch returns no results', async () => {
      expect(await repo().versions.commit([])).toStrictEqual([]);
      expect(await repo().versions.commit([], { atomic: true })).toStrictEqual([]);
    });

    it('a tombstone removes the entry and stays in history', async () => {
      const make = recordMaker();
      const [write] = await commitAll(repo(), [make.write('doc/readme.md', 'hello')]);
      const tombstone = make.remove('doc/readme.md');
      expect(await repo().versions.commit([{ record: tombstone, expectedCurrent: write!.versionId }])).toStrictEqual([
        { ok: true, entry: null },
      ]);
      expect(await repo().versions.getEntry(PROJECT, 'doc/readme.md')).toBeNull();
      expect(await repo().versions.get(PROJECT, tombstone.versionId)).toStrictEqual(tombstone);
      const history = await repo().versions.history(PROJECT, { path: 'doc/readme.md', limit: 10 });
      expect(history).toStrictEqual({ items: [tombstone, write] });
      expect((await repo().versions.listEntries(PROJECT, { prefix: '', limit: 10 })).items).toStrictEqual([]);
      expect(await repo().versions.isDirectory(PROJECT, 'doc')).toBe(false);
      // a deleted path can be created again, with the "must not exist" precondition
      const again = make.write('doc/readme.md', 'back');
      expect(await repo().versions.commit([{ record: again, expectedCurrent: null }])).toStrictEqual([
        { ok: true, entry: entryOf(again) },
      ]);
    });

    it('keeps projects apart', async () => {
      const mine = recordMaker(PROJECT);
      const theirs = recordMaker(OTHER_PROJECT);
      await commitAll(repo(), [mine.write('same.txt', 'mine'), theirs.write('same.txt', 'theirs'), theirs.write('t.txt', 't')]);
      expect((await repo().versions.getEntry(PROJECT, 'same.txt'))?.contentHash).toBe(hashOf('mine'));
      expect((await repo().versions.getEntry(OTHER_PROJECT, 'same.txt'))?.contentHash).toBe(hashOf('theirs'));
      expect(await repo().versions.countVersions(PROJECT)).toBe(1);
      expect(await repo().versions.countVersions(OTHER_PROJECT)).toBe(2);
      expect((await repo().versions.history(PROJECT, { limit: 10 })).items.map((v) => v.projectId)).toStrictEqual([PROJECT]);
    });
  });
}

export function versionReadConformance(repo: RepositoryGetter): void {
  describe('versions reads', () => {
    it('pages history newest first, without duplicates or gaps', async () => {
      const make = recordMaker();
      const records: VersionRecord[] = [];
      for (let i = 0; i < 24; i += 1) {
        records.push(i % 7 === 6 ? make.remove(`p${i % 3}.txt`) : make.write(`p${i % 3}.txt`, `content ${i}`));
      }
      await commitAll(repo(), records);
      const newestFirst = [...records].reverse();

      const all = await collectAll((cursor) => repo().versions.history(PROJECT, { cursor, limit: 5 }), 5);
      expect(all).toStrictEqual(newestFirst);

      const p1 = newestFirst.filter((r) => r.path === 'p1.txt');
      expect(p1).toHaveLength(8);
      // 8 versions in pages of 4: exactly two pages, no empty third page
      const pages = await pagesOf((cursor) => repo().versions.history(PROJECT, { path: 'p1.txt', cursor, limit: 4 }));
      expect(pages).toStrictEqual([p1.slice(0, 4), p1.slice(4)]);
      expect(await repo().versions.history(PROJECT, { path: 'nothing.txt', limit: 4 })).toStrictEqual({ items: [] });
    });

    it('a history cursor stays valid while new versions are written', async () => {
      const make = recordMaker();
      const old = await commitAll(repo(), [make.write('f', '1'), make.write('f', '2'), make.write('f', '3')]);
      const first = await repo().versions.history(PROJECT, { path: 'f', limit: 2 });
      await commitAll(repo(), [make.write('f', '4')]);
      const second = await repo().versions.history(PROJECT, { path: 'f', limit: 2, cursor: first.nextCursor! });
      expect([...first.items, ...second.items]).toStrictEqual([...old].reverse());
    });

    it('lists entries by prefix in path order, treating % and _ literally', async () => {
      const make = recordMaker();
      const paths = ['b', 'a_b/y', 'a%b/x', 'a/c/d', 'aXb/z', 'a/b', 'a.txt', 'a0', 'a/b0'];
      await commitAll(repo(), paths.map((p) => make.write(p, p)));
      const list = async (prefix: string) =>
        (await repo().versions.listEntries(PROJECT, { prefix, limit: 100 })).items.map((e) => e.path);
      expect(await list('')).toStrictEqual(['a%b/x', 'a.txt', 'a/b', 'a/b0', 'a/c/d', 'a0', 'aXb/z', 'a_b/y', 'b']);
      expect(await list('a/')).toStrictEqual(['a/b', 'a/b0', 'a/c/d']);
      expect(await list('a_')).toStrictEqual(['a_b/y']);
      expect(await list('a%')).toStrictEqual(['a%b/x']);
      expect(await list('a/b')).toStrictEqual(['a/b', 'a/b0']);
      expect(await list('zzz')).toStrictEqual([]);
      const pages = await pagesOf((cursor) => repo().versions.listEntries(PROJECT, { prefix: 'a', cursor, limit: 3 }));
      expect(pages.map((page) => page.map((e) => e.path))).toStrictEqual([
        ['a%b/x', 'a.txt', 'a/b'],
        ['a/b0', 'a/c/d', 'a0'],
        ['aXb/z', 'a_b/y'],
      ]);
    });

    it('orders non-ASCII paths by code point', async () => {
      const make = recordMaker();
      const paths = ['données/é.txt', 'données/z.txt', 'données/😀.txt', 'données/\uffee.txt', 'donnees.txt'];
      await commitAll(repo(), paths.map((p) => make.write(p, p)));
      const items = (await repo().versions.listEntries(PROJECT, { prefix: 'données/', limit: 10 })).items;
      expect(items.map((e) => e.path)).toStrictEqual(['données/z.txt', 'données/é.txt', 'données/\uffee.txt', 'données/😀.txt']);
      expect(await repo().versions.isDirectory(PROJECT, 'données')).toBe(true);
    });

    it('tells directories from files and from look-alike names', async () => {
      const make = recordMaker();
      expect(await repo().versions.isDirectory(PROJECT, '')).toBe(false);
      await commitAll(repo(), ['a/b', 'a/c/d', 'a%b/x', 'a.txt', 'a0', 'ab/x'].map((p) => make.write(p, p)));
      const cases: Array<[string, boolean]> = [
        ['', true],
        ['a', true],
        ['a/c', true],
        ['a/b', false],
        ['a%b', true],
        ['a_b', false],
        ['a%', false],
        ['a.txt', false],
        ['missing', false],
      ];
      for (const [dir, expected] of cases) expect(await repo().versions.isDirectory(PROJECT, dir), dir).toBe(expected);
      expect(await repo().versions.isDirectory(OTHER_PROJECT, 'a')).toBe(false);
    });

    it('says why a file cannot be written at a path: a directory there, or a file above it', async () => {
      const make = recordMaker();
      await commitAll(repo(), ['a/b', 'a/c/d', 'a.txt', 'x/y.txt'].map((p) => make.write(p, p)));
      const cases: Array<[string, unknown]> = [
        ['a', { kind: 'directory' }],
        ['a/c', { kind: 'directory' }],
        ['a/b', null],
        ['a/b/new.txt', { kind: 'file-ancestor', ancestor: 'a/b' }],
        ['a/c/d/e/f', { kind: 'file-ancestor', ancestor: 'a/c/d' }],
        ['a.txt/z', { kind: 'file-ancestor', ancestor: 'a.txt' }],
        ['a/new.txt', null],
        ['x/y.txt', null],
        ['fresh/deep/file', null],
      ];
      for (const [path, expected] of cases) expect(await repo().versions.writeConflict(PROJECT, path), path).toStrictEqual(expected);
      expect(await repo().versions.writeConflict(OTHER_PROJECT, 'a/b/new.txt')).toBeNull();
    });
  });
}
