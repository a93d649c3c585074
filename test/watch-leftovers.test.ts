// A daemon killed in the middle of bringing a file to disk (kill -9 three seconds into the restore of
// a 1.4 GB file) left `.strata/incoming/<random>.part` behind for good, one more per crash; a link
// killed between its symlink and its rename leaves `.strata-incoming-<random>` next to its path. The
// next start of the watch project removes both before its catch-up scan, and restores still work.
import { lstat, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor, type WatchedProject, watchProject } from './daemon-harness.js';

const present = (path: string) => lstat(path).then(
  () => true,
  () => false,
);

describe('watch mode removes the temps of interrupted writes when it starts', () => {
  let w: WatchedProject;
  beforeAll(async () => {
    w = await watchProject({
      prepare: async (dir) => {
        await writeFile(join(dir, 'data.csv'), 'first\n');
      },
    });
  });
  afterAll(async () => {
    await w?.dispose();
  });

  it('leftover .part files and link temps are gone after a restart; a user file of that name stays; a restore still lands', async () => {
    await w.idle();
    const first = (await w.history('data.csv'))[0]!;
    await w.stop();

    // What a crash leaves: the daemon's own temps, as materialize.ts names them.
    const incoming = join(w.dir, '.strata', 'incoming');
    await mkdir(incoming, { recursive: true });
    await writeFile(join(incoming, '0123456789abcdef.part'), Buffer.alloc(1 << 20, 7));
    await writeFile(join(incoming, 'fedcba9876543210.part'), 'half a file');
    await mkdir(join(w.dir, 'sub'));
    await symlink('../data.csv', join(w.dir, 'sub', '.strata-incoming-00112233aabbccdd'));
    await symlink('data.csv', join(w.dir, '.strata-incoming-99887766aabbccdd'));
    // A regular file that merely has the prefix is the user's: left alone.
    await writeFile(join(w.dir, '.strata-incoming-mine'), 'keep me\n');

    await w.restart();
    await w.idle();
    expect(await readdir(incoming)).toEqual([]);
    expect(await present(join(w.dir, 'sub', '.strata-incoming-00112233aabbccdd'))).toBe(false);
    expect(await present(join(w.dir, '.strata-incoming-99887766aabbccdd'))).toBe(false);
    expect(await readFile(join(w.dir, '.strata-incoming-mine'), 'utf8')).toBe('keep me\n');
    // None of it was versioned.
    expect([...(await w.tree()).keys()].sort()).toEqual(['data.csv']);

    // A restore after the sweep goes through `.strata/incoming` as before and leaves nothing there.
    await writeFile(join(w.dir, 'data.csv'), 'second\n');
    await waitFor('the edit is versioned', async () => ((await w.read('data.csv')) === 'second\n' ? true : undefined), 20_000);
    await w.api('POST', `/v1/projects/${w.projectId}/history/restore`, { versionId: first.versionId });
    await waitFor('the restore is on disk', async () => ((await readFile(join(w.dir, 'data.csv'), 'utf8')) === 'first\n' ? true : undefined), 20_000);
    expect(await readdir(incoming)).toEqual([]);
  });
});
