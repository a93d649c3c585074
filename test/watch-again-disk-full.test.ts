// `strata init DIR` (or `strata watch DIR`) again on a watched directory whose disk is full: the
// user's way back after the server refused the key is `strata init DIR --server URL --project ID`,
// full disk or not. The daemon rewrote DIR/.strata/project.json each time, unchanged, and the full
// disk made that "Internal error" (ENOSPC), with an empty temp file left in DIR/.strata (sync model
// seed 47003 path 11). Needs root (a tmpfs of its own for the project directory).

import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { disposeWithDisk, sh, type WatchedProject, watchProject } from './daemon-harness.js';

const asRoot = process.getuid?.() === 0;
let disk: string | null = null;
let w: WatchedProject | undefined;

afterAll(() => disposeWithDisk(w, disk));

describe.skipIf(!asRoot)('binding a watched directory again, its disk full', () => {
  it('answers as the first time and leaves nothing in .strata', async () => {
    w = await watchProject({
      prepare: async (dir) => {
        disk = dir;
        await sh('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'strata-test-full', dir]);
        await mkdir(dir, { recursive: true });
      },
    });
    const before = (await readdir(join(w.dir, '.strata'))).sort();
    // Every block taken (tmpfs counts pages: single pages until ENOSPC).
    await sh('dd', ['if=/dev/zero', `of=${join(w.dir, 'filler')}`, 'bs=64k'], { allowFail: true, timeoutMs: 10_000 });
    for (let i = 0; i < 64; i++) {
      const full = await writeFile(join(w.dir, `filler-${i}`), Buffer.alloc(4096, 1)).then(
        () => false,
        (error: NodeJS.ErrnoException) => error.code === 'ENOSPC',
      );
      if (full) break;
    }
    const again = await w.api<{ project: { projectId: string } }>('POST', '/v1/daemon/projects', { dir: w.dir, mode: 'watch' });
    expect(again.project.projectId).toBe(w.projectId);
    expect((await readdir(join(w.dir, '.strata'))).sort()).toEqual(before);
  }, 60_000);
});
