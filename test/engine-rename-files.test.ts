// engine renameFiles (commands/rename-file.ts): many renames in one atomic commit, as watch mode
// records a directory moved inside the project (issue 38 item 1). All or none; each pair is a
// tombstone right before the write of the same content, so each still reads as a rename.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isStrataError } from '../engine/errors.js';
import { alice, openTestEngine, readAll, type TestEngine } from './helpers/world.js';

describe('engine: renameFiles', () => {
  let t: TestEngine;
  beforeEach(async () => {
    t = await openTestEngine();
  });
  afterEach(async () => {
    await t.dispose();
  });

  const write = (path: string, text: string) => t.engine.writeFile({ projectId: t.projectId, path, actor: alice, content: Buffer.from(text) });
  const read = async (path: string) => (await readAll((await t.engine.readFile({ projectId: t.projectId, path })).stream)).toString();
  const codeOf = (promise: Promise<unknown>) =>
    promise.then(
      () => null,
      (error: unknown) => (isStrataError(error) ? error.code : String(error)),
    );

  it('renames every pair in one commit: a tombstone, then the same content at the new path', async () => {
    for (const n of [1, 2, 3]) await write(`big/f${n}.dat`, `data ${n}`);
    const results = await t.engine.renameFiles({ projectId: t.projectId, actor: alice, pairs: [1, 2, 3].map((n) => ({ from: `big/f${n}.dat`, to: `big2/f${n}.dat` })) });
    expect(results.map((r) => [r.deleted.path, r.created.version.path])).toEqual([1, 2, 3].map((n) => [`big/f${n}.dat`, `big2/f${n}.dat`]));
    for (const n of [1, 2, 3]) expect(await read(`big2/f${n}.dat`)).toBe(`data ${n}`);
    expect(await t.engine.countFiles(t.projectId)).toBe(3);
    const history = (await t.engine.history({ projectId: t.projectId, limit: 6 })).items.reverse();
    expect(history.map((v) => `${v.kind} ${v.path}`)).toEqual([1, 2, 3].flatMap((n) => [`delete big/f${n}.dat`, `write big2/f${n}.dat`]));
  });

  it('is all or none: a missing source, a target below a file or a path named twice renames nothing', async () => {
    await write('a.txt', 'a');
    await write('b.txt', 'b');
    await write('file', 'a file');
    expect(await codeOf(t.engine.renameFiles({ projectId: t.projectId, actor: alice, pairs: [{ from: 'a.txt', to: 'x/a.txt' }, { from: 'gone.txt', to: 'x/gone.txt' }] }))).toBe('PATH_NOT_FOUND');
    expect(await codeOf(t.engine.renameFiles({ projectId: t.projectId, actor: alice, pairs: [{ from: 'a.txt', to: 'x/a.txt' }, { from: 'b.txt', to: 'file/b.txt' }] }))).toBe('PATH_EXISTS');
    expect(await codeOf(t.engine.renameFiles({ projectId: t.projectId, actor: alice, pairs: [{ from: 'a.txt', to: 'c.txt' }, { from: 'c.txt', to: 'd.txt' }] }))).toBe('INVALID_ARGUMENT');
    expect(await read('a.txt')).toBe('a');
    expect(await read('b.txt')).toBe('b');
    expect(await t.engine.stat({ projectId: t.projectId, path: 'x/a.txt' })).toBeNull();
    expect(await t.engine.countFiles(t.projectId)).toBe(3);
  });
});
