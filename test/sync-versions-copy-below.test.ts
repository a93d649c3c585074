// A version made below a path the server kept as a conflict copy (issue 38, seed 38006 path 11):
// wsC made `a/a` where the server had the file `a`, so it was kept as `a (conflict wsC …)/a`; wsC then
// deleted `a/a` and made `a/a/a`. The deletion went nowhere (the server had no `a/a`) and `a/a/a` was
// placed below the copy, where `a (conflict wsC …)/a` is a file: refused (PATH_EXISTS) for good.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, openHarness } from './control-api-harness.js';
import { type SentVersion, syncedVersions } from './helpers/synced-versions.js';

let h: Harness;
let project: string;

beforeAll(async () => {
  h = await openHarness();
  project = await h.createProject('copies');
});

afterAll(async () => {
  await h.dispose();
});

const versions = syncedVersions(() => h, () => project);
const { made, read, history } = versions;
const send = async (workstation: string, sent: SentVersion[]) => (await versions.send(workstation, sent)).results;

describe('versions below a conflict copy', () => {
  it('a deletion of a file kept as a copy deletes the copy; the directory made at its path then lands below the copy', async () => {
    expect(await send('wsA', [await made('a', null, 'a file on wsA\n', '2026-11-29T05:40:00.000Z')])).toMatchObject([{ result: 'applied' }]);
    const first = await made('a/a', null, 'a/a on wsC\n', '2026-11-29T05:40:10.000Z');
    const copy = 'a (conflict wsC 2026-11-29 0540)/a';
    expect(await send('wsC', [first])).toMatchObject([{ result: 'conflict', path: copy }]);
    // In one push, as the outbox sends them: `a/a` deleted, then made a directory with `a/a/a` in it.
    const deleted = await made('a/a', first.versionId, null, '2026-11-29T05:40:20.000Z');
    const below = await made('a/a/a', null, 'a/a/a on wsC\n', '2026-11-29T05:40:30.000Z');
    const results = await send('wsC', [deleted, below]);
    expect(results[0]).toEqual({ versionId: deleted.versionId, result: 'applied', path: copy });
    expect(results[1]).toMatchObject({ versionId: below.versionId, result: 'conflict', path: `${copy}/a` });
    expect((await history(copy))[0]).toMatchObject({ versionId: deleted.versionId, kind: 'delete' });
    expect(await read(`${copy}/a`)).toBe('a/a/a on wsC\n');
    expect(await read('a')).toBe('a file on wsA\n');
  });

  it('a copy that is still a file (edited elsewhere) is not written below: the version gets the next copy name', async () => {
    expect(await send('wsA', [await made('b', null, 'b on wsA\n', '2026-11-29T06:10:00.000Z')])).toMatchObject([{ result: 'applied' }]);
    const first = await made('b/b', null, 'b/b on wsC\n', '2026-11-29T06:10:10.000Z');
    const copy = 'b (conflict wsC 2026-11-29 0610)/b';
    expect(await send('wsC', [first])).toMatchObject([{ result: 'conflict', path: copy }]);
    // wsB took the copy and edited it: wsC's deletion gives way to that edit, and the copy stays a file.
    const edited = await made(copy, first.versionId, 'the copy edited on wsB\n', '2026-11-29T06:10:15.000Z');
    expect(await send('wsB', [edited])).toMatchObject([{ result: 'applied', path: copy }]);
    const deleted = await made('b/b', first.versionId, null, '2026-11-29T06:10:20.000Z');
    const below = await made('b/b/b', null, 'b/b/b on wsC\n', '2026-11-29T06:10:30.000Z');
    const results = await send('wsC', [deleted, below]);
    expect(results[0]).toMatchObject({ versionId: deleted.versionId, result: 'superseded' });
    expect(results[1]).toMatchObject({ versionId: below.versionId, result: 'conflict', path: 'b (conflict wsC 2026-11-29 0610 2)/b/b' });
    expect(await read('b (conflict wsC 2026-11-29 0610 2)/b/b')).toBe('b/b/b on wsC\n');
    expect(await read(copy)).toBe('the copy edited on wsB\n');
  });

  it('a second save of a file kept below an ancestor copy continues that copy (no second copy)', async () => {
    expect(await send('wsA', [await made('c', null, 'c on wsA\n', '2026-11-29T06:20:00.000Z')])).toMatchObject([{ result: 'applied' }]);
    const v1 = await made('c/d/e.txt', null, 'e v1\n', '2026-11-29T06:20:10.000Z');
    const v2 = await made('c/d/e.txt', v1.versionId, 'e v2\n', '2026-11-29T06:21:10.000Z');
    const copy = 'c (conflict wsC 2026-11-29 0620)/d/e.txt';
    expect(await send('wsC', [v1, v2])).toMatchObject([
      { result: 'conflict', path: copy },
      { result: 'conflict', path: copy },
    ]);
    expect(await read(copy)).toBe('e v2\n');
    expect(await history('c (conflict wsC 2026-11-29 0621)/d/e.txt')).toEqual([]);
  });
});
