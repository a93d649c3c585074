// Watch mode versions regular files only. A symbolic link (to a file, to a directory outside the
// project, or a loop) is neither followed nor versioned, and `strata status` says so, so a link such as
// `data -> /scratch/run1` never looks protected.
import { mkdir, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor, type WatchedProject, watchProject } from './daemon-harness.js';

describe('watch mode and symbolic links', () => {
  let w: WatchedProject;
  let outside: string;
  beforeAll(async () => {
    w = await watchProject({
      prepare: async (dir) => {
        outside = join(dir, '..', 'scratch');
        await mkdir(join(outside, 'run1'), { recursive: true });
        await writeFile(join(outside, 'run1', 'big.dat'), 'outside the project\n');
        await writeFile(join(dir, 'notes.txt'), 'notes\n');
        await symlink(join(outside, 'run1'), join(dir, 'data'));
        await symlink('notes.txt', join(dir, 'notes-link.txt'));
      },
    });
  });
  afterAll(async () => {
    await w?.dispose();
    if (outside) await rm(outside, { recursive: true, force: true });
  });

  const linkWarning = async () => (await w.status()).warnings.find((warning) => warning.includes('symbolic link'));

  it('counts the links found by the initial scan, versions none of them, and follows none', async () => {
    await w.idle();
    const warning = await waitFor('the link warning', linkWarning);
    expect(warning).toMatch(/^2 symbolic link\(s\) are not versioned .* e\.g\. "(data|notes-link\.txt)"$/);
    const tree = await w.tree();
    expect([...tree.keys()]).toEqual(['notes.txt']);
  });

  it('counts a link made while watching, a loop included, and forgets removed ones', async () => {
    await mkdir(join(w.dir, 'sub'));
    await symlink('..', join(w.dir, 'sub', 'loop'));
    await writeFile(join(w.dir, 'sub', 'real.txt'), 'real\n');
    await w.idle();
    await waitFor('3 links', async () => ((await linkWarning())?.startsWith('3 ') ? true : undefined));
    await unlink(join(w.dir, 'data'));
    await unlink(join(w.dir, 'notes-link.txt'));
    await w.idle();
    const warning = await waitFor('1 link', async () => {
      const text = await linkWarning();
      return text?.startsWith('1 ') ? text : undefined;
    });
    expect(warning).toContain('"sub/loop"');
    expect([...(await w.tree()).keys()].sort()).toEqual(['notes.txt', 'sub/real.txt']);
  });
});
