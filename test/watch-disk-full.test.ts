// Watch mode with the home on a filesystem that fills up (a simulation writing results into the
// project while the store's disk runs out): a file the store could not take is versioned once there
// is room again, without a restart. Before, it stayed unversioned until the next reconciliation (10
// minutes) or a restart: a walkthrough's 100 MB result was still missing from history 20 s after
// `strata gc` had freed 200 MB. Needs root (a tmpfs of its own for the home).

import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { disposeWithDisk, sh, waitFor, type WatchedProject, watchProject } from './daemon-harness.js';

const asRoot = process.getuid?.() === 0;
let home: string | null = null;
let w: WatchedProject | undefined;

afterAll(() => disposeWithDisk(w, home));

const sha = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

describe.skipIf(!asRoot)('watch mode, the home full', () => {
  it('versions what it could not store once there is room again, without a restart', async () => {
    w = await watchProject({
      prepare: async (dir) => {
        home = join(dirname(dir), 'home');
        await mkdir(home);
        await sh('mount', ['-t', 'tmpfs', '-o', 'size=32m', 'strata-test-full', home]);
      },
    });
    await writeFile(join(w.dir, 'before.txt'), 'before\n');
    await w.idle();
    const filler = join(home!, 'filler');
    await sh('dd', ['if=/dev/zero', `of=${filler}`, 'bs=1M'], { allowFail: true, timeoutMs: 30_000 });

    // Written while the home is full: the store cannot take them.
    const results = randomBytes(3 << 20);
    await mkdir(join(w.dir, 'run1'));
    await writeFile(join(w.dir, 'run1', 'results.bin'), results);
    await writeFile(join(w.dir, 'run1', 'log.txt'), 'step 1 done\n');
    await waitFor(
      'the failed capture to show in status',
      async () => ((await w!.status()).errors.some((error) => error.path === 'run1/results.bin') ? true : undefined),
      20_000,
    );
    expect((await w.history('run1/results.bin')).length).toBe(0);

    // Room again (the user deleted something on that disk); the files are not touched again.
    await rm(filler);
    await waitFor('both files to be versioned', async () => ((await w!.history('run1/results.bin')).length > 0 && (await w!.history('run1/log.txt')).length > 0 ? true : undefined), 30_000);
    const response = await fetch(`${w.daemon.url}/v1/projects/${w.projectId}/fs/read?path=run1/results.bin`, {
      headers: { authorization: `Bearer ${w.daemon.owner.apiKey}` },
    });
    expect(sha(Buffer.from(await response.arrayBuffer()))).toBe(sha(results));
    expect(await w.read('run1/log.txt')).toBe('step 1 done\n');
    expect(sha(await readFile(join(w.dir, 'run1', 'results.bin')))).toBe(sha(results));
    // Its failures are over: status no longer lists them.
    expect((await w.status()).errors.filter((error) => error.path?.startsWith('run1/'))).toEqual([]);
  }, 90_000);
});
