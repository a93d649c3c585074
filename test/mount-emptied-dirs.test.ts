// Directories a mount made itself, emptied from outside (found as a user: `tar x` into a mounted clone,
// then `rm -rf pkg` on another workstation). Watch mode removes a directory whose last file a pull, a
// restore or the API deleted (materialize.ts removeEmptyParents); the mount kept `pkg/sub` and `pkg`,
// empty, while every other workstation had no `pkg` and `sync wait` said in sync. Now the mount drops
// them as well (ops-dirs.ts dropEmptiedDirs); a directory with anything left below it stays, and the
// user's own `rm` of a last file still keeps its directory, as on any filesystem.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject, waitFor } from './mount-harness.js';

let m: MountedDir;
beforeAll(async () => {
  m = await mountProject();
}, 60_000);
afterAll(async () => {
  await m?.dispose();
}, 60_000);

const p = (path: string) => `/v1/projects/${m.projectId}${path}`;
const listing = async () => (await inMount(m, 'find . -path ./.strata -prune -o -print | sort')).stdout.split('\n').filter((l) => l !== '' && l !== '.' && l !== './.strata');

describe('directories the mount made, emptied by deletions from outside', () => {
  it('go, deepest first; one with anything left below it stays; a local rm keeps its directory', async () => {
    await inMount(
      m,
      [
        'mkdir -p pkg/sub keep mine',
        'echo a > pkg/sub/a.txt; echo b > pkg/b.txt',
        'echo k > keep/k.txt; echo swap > keep/.k.txt.swp', // the swap file is ignored: not versioned, but there
        'echo m > mine/m.txt',
      ].join('\n'),
    );
    await m.idle();
    for (const path of ['pkg/sub/a.txt', 'pkg/b.txt', 'keep/k.txt']) await m.api('POST', p('/fs/delete'), { path });
    await waitFor('the emptied directories to go', async () => ((await listing()).some((l) => l.startsWith('./pkg')) ? undefined : true), 15_000);
    const after = await listing();
    expect(after).toContain('./keep');
    expect(after).toContain('./keep/.k.txt.swp');
    expect(after).not.toContain('./keep/k.txt');

    // The user's own rm of a directory's last file is an ordinary rm: the directory stays.
    await inMount(m, 'rm mine/m.txt');
    await m.idle();
    expect(await listing()).toContain('./mine');
  }, 60_000);
});
