import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isStrataError, type StrataError } from '../engine/errors.js';
import { isUuid } from '../engine/ids.js';
import { alice, bob, countObjects, openTestEngine, readAll, type TestEngine } from './helpers/world.js';

// BLAKE3 of the ASCII bytes "abc" (reference test vector).
const ABC = 'blake3:6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85';

async function expectCode(promise: Promise<unknown>, code: string, message?: RegExp): Promise<StrataError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(isStrataError(error), `expected StrataError ${code}, got ${String(error)}`).toBe(true);
  expect((error as StrataError).code).toBe(code);
  if (message) expect((error as StrataError).message).toMatch(message);
  return error as StrataError;
}

describe('engine: files and history', () => {
  let t: TestEngine;
  beforeEach(async () => {
    t = await openTestEngine();
  });
  afterEach(async () => {
    await t.dispose();
  });

  const write = (path: string, text: string, actor = alice) =>
    t.engine.writeFile({ projectId: t.projectId, path, actor, content: Buffer.from(text) });
  const read = async (path: string, versionId?: string) =>
    (await readAll((await t.engine.readFile({ projectId: t.projectId, path, ...(versionId ? { versionId } : {}) })).stream)).toString();

  it('writes a version record exactly as DESIGN.md §2 describes', async () => {
    const { entry, version } = await write('src/main.m', 'abc');
    expect(isUuid(version.versionId)).toBe(true);
    expect(version.versionId[14]).toBe('7'); // UUIDv7
    expect(version).toEqual({
      versionId: version.versionId,
      projectId: t.projectId,
      path: 'src/main.m',
      contentHash: ABC,
      size: 3,
      actor: alice,
      timestamp: '2026-11-22T09:00:00.000Z',
      kind: 'write',
      restoredFrom: null,
      executable: false,
      symlink: false,
      dataset: false,
    });
    expect(entry).toEqual({ path: 'src/main.m', versionId: version.versionId, contentHash: ABC, size: 3, timestamp: version.timestamp, executable: false, symlink: false, dataset: false });
    expect(await read('src/main.m')).toBe('abc');
  });

  it('streams content in and keeps every version readable', async () => {
    async function* chunks() {
      for (let i = 0; i < 100; i++) yield Buffer.from(`line ${i}\n`);
    }
    const first = await t.engine.writeFile({ projectId: t.projectId, path: 'log.txt', actor: alice, content: chunks() });
    t.clock.advance(1000);
    const second = await write('log.txt', 'rewritten', bob);
    expect(first.version.size).toBe(Array.from({ length: 100 }, (_, i) => `line ${i}\n`).join('').length);
    expect(await read('log.txt')).toBe('rewritten');
    expect(await read('log.txt', first.version.versionId)).toMatch(/^line 0\n/);
    const history = await t.engine.history({ projectId: t.projectId, path: 'log.txt' });
    expect(history.items.map((v) => v.versionId)).toEqual([second.version.versionId, first.version.versionId]);
    expect(history.items[0]!.actor).toEqual(bob);
    expect(history.items[0]!.timestamp).toBe('2026-11-22T09:00:01.000Z');
  });

  it('deletes as a tombstone, and a restore brings the file back as a new version', async () => {
    const { version: v1 } = await write('a.py', 'print(1)');
    const { version: tomb } = await t.engine.deleteFile({ projectId: t.projectId, path: 'a.py', actor: alice });
    expect(tomb).toMatchObject({ kind: 'delete', contentHash: null, size: 0, path: 'a.py' });
    await expectCode(t.engine.readFile({ projectId: t.projectId, path: 'a.py' }), 'PATH_NOT_FOUND');
    expect(await t.engine.stat({ projectId: t.projectId, path: 'a.py' })).toBeNull();
    await expectCode(t.engine.deleteFile({ projectId: t.projectId, path: 'a.py', actor: alice }), 'PATH_NOT_FOUND');
    await expectCode(t.engine.restoreVersion({ projectId: t.projectId, versionId: tomb.versionId, actor: alice }), 'VERSION_IS_TOMBSTONE');

    const restored = await t.engine.restoreVersion({ projectId: t.projectId, versionId: v1.versionId, actor: bob });
    expect(restored.version).toMatchObject({ kind: 'restore', restoredFrom: v1.versionId, contentHash: v1.contentHash, path: 'a.py', actor: bob });
    expect(await read('a.py')).toBe('print(1)');
    const kinds = (await t.engine.history({ projectId: t.projectId, path: 'a.py' })).items.map((v) => v.kind);
    expect(kinds).toEqual(['restore', 'delete', 'write']);
  });

  it('restores an older version immediately without losing history', async () => {
    const { version: v1 } = await write('model.m', 'x = 1;');
    await write('model.m', 'x = 2;');
    await write('model.m', 'x = 3;');
    await t.engine.restoreVersion({ projectId: t.projectId, versionId: v1.versionId, actor: alice });
    expect(await read('model.m')).toBe('x = 1;');
    expect((await t.engine.history({ projectId: t.projectId, path: 'model.m' })).items).toHaveLength(4);
  });

  it('refuses a version of another project, and changes nothing', async () => {
    const other = await t.engine.createProject({ orgId: t.orgId, name: 'other' });
    const { version: foreign } = await t.engine.writeFile({ projectId: other.projectId, path: 'x.m', actor: alice, content: Buffer.from('secret') });
    await write('x.m', 'mine');
    await expectCode(t.engine.restoreVersion({ projectId: t.projectId, versionId: foreign.versionId, actor: alice }), 'VERSION_NOT_FOUND');
    await expectCode(t.engine.readFile({ projectId: t.projectId, path: 'x.m', versionId: foreign.versionId }), 'VERSION_NOT_FOUND');
    await expectCode(t.engine.getVersion(t.projectId, foreign.versionId), 'VERSION_NOT_FOUND');
    expect(await read('x.m')).toBe('mine');
    expect((await t.engine.history({ projectId: t.projectId })).items).toHaveLength(1);
  });

  it('renames atomically: tombstone at the source, same content at the target, no bytes copied', async () => {
    const { version: v1 } = await write('draft.md', 'notes');
    const { deleted, created } = await t.engine.renameFile({ projectId: t.projectId, from: 'draft.md', to: 'docs/final.md', actor: alice });
    expect(deleted).toMatchObject({ path: 'draft.md', kind: 'delete' });
    expect(created.version).toMatchObject({ path: 'docs/final.md', contentHash: v1.contentHash, kind: 'write' });
    expect(await read('docs/final.md')).toBe('notes');
    await expectCode(t.engine.readFile({ projectId: t.projectId, path: 'draft.md' }), 'PATH_NOT_FOUND');

    await write('other.md', 'other');
    await expectCode(t.engine.renameFile({ projectId: t.projectId, from: 'other.md', to: 'docs/final.md', actor: alice }), 'PATH_EXISTS');
    expect(await read('other.md')).toBe('other');
    expect(await read('docs/final.md')).toBe('notes');
    await t.engine.renameFile({ projectId: t.projectId, from: 'other.md', to: 'docs/final.md', actor: alice, overwrite: true });
    expect(await read('docs/final.md')).toBe('other');
  });

  it('renames a file to a path below its own name (mv b c/a; mkdir b; mv c/a b/a is one rename)', async () => {
    const { version } = await write('b', 'bytes');
    const { created } = await t.engine.renameFile({ projectId: t.projectId, from: 'b', to: 'b/a', actor: alice });
    expect(created.version).toMatchObject({ path: 'b/a', contentHash: version.contentHash });
    expect(await read('b/a')).toBe('bytes');
    await expectCode(t.engine.readFile({ projectId: t.projectId, path: 'b' }), 'PATH_NOT_FOUND');
    // and in a group of renames; another file above the target is still a conflict
    await write('c', 'c');
    await t.engine.renameFiles({ projectId: t.projectId, pairs: [{ from: 'c', to: 'c/d/e' }], actor: alice });
    expect(await read('c/d/e')).toBe('c');
    await write('f', 'f');
    await expectCode(t.engine.renameFile({ projectId: t.projectId, from: 'f', to: 'c/d/e/g', actor: alice }), 'PATH_EXISTS');
    expect(await read('f')).toBe('f');
  });

  it('rejects a stale base version and keeps the newer content', async () => {
    const { version: v1 } = await write('cfg.toml', 'a = 1');
    await write('cfg.toml', 'a = 2');
    const error = await expectCode(
      t.engine.writeFile({ projectId: t.projectId, path: 'cfg.toml', actor: bob, content: Buffer.from('a = 3'), baseVersionId: v1.versionId }),
      'STALE_BASE_VERSION',
    );
    expect(error.status).toBe(409);
    expect(await read('cfg.toml')).toBe('a = 2');
    await expectCode(t.engine.writeFile({ projectId: t.projectId, path: 'cfg.toml', actor: bob, content: Buffer.from('new'), baseVersionId: null }), 'STALE_BASE_VERSION');
    const current = (await t.engine.stat({ projectId: t.projectId, path: 'cfg.toml' }))!;
    await t.engine.writeFile({ projectId: t.projectId, path: 'cfg.toml', actor: bob, content: Buffer.from('a = 4'), baseVersionId: current.versionId });
    expect(await read('cfg.toml')).toBe('a = 4');
  });

  it('keeps files and directories apart when they are written at once', async () => {
    for (let i = 0; i < 20; i++) {
      const [file, below] = await Promise.allSettled([write(`r${i}`, 'a file'), write(`r${i}/inner.txt`, 'below it')]);
      expect([file, below].filter((result) => result.status === 'fulfilled'), `round ${i}`).toHaveLength(1);
      const refused = (file.status === 'rejected' ? file : below) as PromiseRejectedResult;
      expect(isStrataError(refused.reason) && ['PATH_EXISTS', 'PATH_IS_DIRECTORY'].includes(refused.reason.code)).toBe(true);
    }
  });

  it('keeps files and directories apart', async () => {
    await write('data/run1/out.txt', '1');
    await expectCode(write('data/run1', 'x'), 'PATH_IS_DIRECTORY');
    await expectCode(write('data/run1/out.txt/inner', 'x'), 'PATH_EXISTS');
    const root = await t.engine.listDirectory({ projectId: t.projectId, path: '' });
    expect(root.items).toEqual([{ name: 'data', path: 'data', type: 'directory' }]);
    await write('data/readme.md', 'r');
    const data = await t.engine.listDirectory({ projectId: t.projectId, path: 'data/' });
    expect(data.items.map((i) => [i.name, i.type])).toEqual([
      ['readme.md', 'file'],
      ['run1', 'directory'],
    ]);
    await expectCode(t.engine.listDirectory({ projectId: t.projectId, path: 'nope' }), 'PATH_NOT_FOUND');
  });

  it('rejects bad paths before touching anything', async () => {
    const bad = ['', '/abs', '../up', 'a/../b', 'a/./b', 'a//b', 'a\u0000b', 'tab\there', 'line\nbreak', 'a\\b', 'x'.repeat(256), `${'d/'.repeat(2100)}f`, '\ud800'];
    for (const path of bad) {
      await expectCode(write(path, 'x'), 'INVALID_PATH');
    }
    expect((await t.engine.history({ projectId: t.projectId })).items).toHaveLength(0);
    expect(await countObjects(t)).toBe(0);
  });

  it('paginates history newest first with no gaps or duplicates', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 250; i++) ids.push((await write('counter.txt', String(i))).version.versionId);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await t.engine.history({ projectId: t.projectId, path: 'counter.txt', limit: 100, ...(cursor ? { cursor } : {}) });
      seen.push(...page.items.map((v) => v.versionId));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(ids.reverse());
    await expectCode(t.engine.history({ projectId: t.projectId, cursor: 'garbage!' }), 'INVALID_CURSOR');
    await expectCode(t.engine.history({ projectId: t.projectId, limit: 0 }), 'INVALID_ARGUMENT');
  });

  it('reads byte ranges', async () => {
    await write('r.txt', '0123456789');
    const { stream, size } = await t.engine.readFile({ projectId: t.projectId, path: 'r.txt', range: { start: 2, end: 5 } });
    expect(size).toBe(4);
    expect((await readAll(stream)).toString()).toBe('2345');
    await expectCode(t.engine.readFile({ projectId: t.projectId, path: 'r.txt', range: { start: 10, end: 12 } }), 'INVALID_ARGUMENT');
  });

  it('counts current files: nested ones, each path once however many versions, not tombstones', async () => {
    expect(await t.engine.countFiles(t.projectId)).toBe(0);
    for (const path of ['a.py', 'src/b.py', 'src/deep/c.py', 'd.txt']) await write(path, path);
    await write('a.py', 'again');
    await t.engine.deleteFile({ projectId: t.projectId, path: 'd.txt', actor: alice });
    await t.engine.renameFile({ projectId: t.projectId, from: 'src/b.py', to: 'src/e.py', actor: alice });
    expect(await t.engine.countFiles(t.projectId)).toBe(3);
  });

  it('answers PROJECT_NOT_FOUND for unknown projects', async () => {
    await expectCode(t.engine.writeFile({ projectId: 'nope', path: 'a', actor: alice, content: Buffer.from('') }), 'PROJECT_NOT_FOUND');
    await expectCode(t.engine.history({ projectId: 'nope' }), 'PROJECT_NOT_FOUND');
    await expectCode(t.engine.countFiles('nope'), 'PROJECT_NOT_FOUND');
  });
});
