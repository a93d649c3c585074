// A directory made on the mount (`mkdir d`) whose files came from elsewhere, and were then removed
// elsewhere (`rm -r d` on another workstation, pulled): watch mode removes the directories an
// incoming deletion empties on disk (materialize.ts removeEmptyParents), and the mount kept them —
// a directory of its own (explicit) stayed, empty, for good, where every other workstation had none.
// Now the mount lets it go the same way when nothing is left in it: no file, no subdirectory, nothing
// unversioned in its backing directory. The mount's own `rm d/x` still keeps `d`, as `rm` on a disk does.
//
// "Elsewhere" is the daemon's API on the same home: a pulled change reaches the mount the same way
// (a record of the engine the mount did not make).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject, waitFor } from './mount-harness.js';

let m: MountedDir;

beforeAll(async () => {
  m = await mountProject();
});

afterAll(async () => {
  await m?.dispose();
});

const p = (suffix: string) => `/v1/projects/${m.projectId}${suffix}`;
const put = (path: string, body: string) => m.api('PUT', p(`/fs/write?path=${encodeURIComponent(path)}`), body);
const remove = (path: string) => m.api('POST', p('/fs/delete'), { path });

async function shows(test: string): Promise<void> {
  await waitFor(`the mount to show: ${test}`, async () => ((await inMount(m, `if ${test}; then echo yes; fi`)).stdout === 'yes\n' ? true : undefined), 20_000);
}

describe('directories made on the mount, emptied from elsewhere', () => {
  it('go once the files below them are removed elsewhere, nested ones too', async () => {
    await inMount(m, 'mkdir -m 0700 d && mkdir -p n/e');
    await m.idle();
    await put('d/x', 'x\n');
    await put('n/e/y', 'y\n');
    await shows('[ -f d/x ] && [ -f n/e/y ]');
    await remove('d/x');
    await remove('n/e/y');
    await shows('[ ! -e d ] && [ ! -e n ]');
    expect((await inMount(m, 'ls -A')).stdout).not.toMatch(/^(d|n)$/m);
    // The names are free again: a file from elsewhere makes `d` a directory of the project's, with
    // a directory's usual mode (not the one `mkdir -m` gave the one that went).
    await put('d/y', 'y\n');
    await shows('[ -f d/y ]');
    expect((await inMount(m, 'stat -c %a d')).stdout).toBe('755\n');
    // Made once more on the mount, it is a directory of the mount's own as before.
    await inMount(m, 'mkdir n && echo z > n/z');
    await m.idle();
    expect((await m.read('n/z')).toString()).toBe('z\n');
  });

  it('stay while they hold something: an unversioned file, or a directory made here and never filled', async () => {
    await inMount(m, 'mkdir s && mkdir -p k/empty');
    await m.idle();
    await put('s/x', 'x\n');
    await put('k/x', 'x\n');
    await shows('[ -f s/x ] && [ -f k/x ]');
    await inMount(m, 'echo editor > s/.x.swp');
    await remove('s/x');
    await remove('k/x');
    await shows('[ ! -e s/x ] && [ ! -e k/x ]');
    expect((await inMount(m, 'ls -A s; ls -A k; cat s/.x.swp')).stdout).toBe('.x.swp\nempty\neditor\n');
  });

  it("stay when the last file goes through the mount itself (the mount's own rm)", async () => {
    await inMount(m, 'mkdir own');
    await put('own/x', 'x\n');
    await shows('[ -f own/x ]');
    await inMount(m, 'rm own/x');
    await m.idle();
    expect((await inMount(m, 'stat -c %F own; ls -A own')).stdout).toBe('directory\n');
  });
});
