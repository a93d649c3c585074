// A path the incoming side skipped with a warning is tried again once what blocked it is gone. The
// sync model's seed 5000 path 3 (with the mount): A ran `rm -r a; echo v73 > a` while B ran `rm a/b;
// mkdir a/b; echo v47 > a/b/a`. B's daemon met its directory `a` in the way of the head's file `a`
// before B's capture of `a/b/a` had put it in the index, so the directory held something not
// versioned and was left (a warning, not a thrown failure). Only thrown failures were retried:
// once `a/b/a` was versioned (and kept below a conflict copy) the directory could go, but nothing
// looked at `a` again, and B said "1 file … could not be written here, e.g. "a"" for good.
//
// Forced here without a race: the project gets a file `d` from another process on the same home
// while the daemon is stopped; on disk `d` is a directory holding only an ignored file (not in
// history, so it may not be removed). The user then removes that file: the directory holds nothing
// but itself, no change reaches the engine, and the next rounds must bring the file down.
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openLocalEngine } from '../engine/local.js';
import { type WatchedProject, waitFor, watchProject } from './daemon-harness.js';

let w: WatchedProject | undefined;
afterEach(async () => {
  await w?.dispose();
  w = undefined;
});

describe('watch mode: a path skipped with a warning', () => {
  it('is tried again when what was in its way is gone, with no change of the project', { timeout: 90_000 }, async () => {
    w = await watchProject();
    await writeFile(join(w.dir, 'other'), 'other\n');
    await w.idle();
    await w.stop();
    const other = await openLocalEngine({ home: w.home });
    try {
      await other.engine.writeFile({ projectId: w.projectId, path: 'd', actor: { id: 'other', kind: 'local', name: 'another process' }, content: Buffer.from('file d\n') });
    } finally {
      await other.close();
    }
    await mkdir(join(w.dir, 'd'));
    await writeFile(join(w.dir, 'd', 'notes.swp'), 'an editor swap file: ignored, so never versioned\n');
    await w.restart();

    const warned = await waitFor(
      'the warning for d',
      async () => (await w!.status()).warnings.find((warning) => warning.includes('"d"')),
      30_000,
    );
    expect(warned).toMatch(/a directory is in its place/);
    expect((await stat(join(w.dir, 'd'))).isDirectory()).toBe(true);

    // Nothing the engine records: only a later round of the incoming side can see the way is free.
    await rm(join(w.dir, 'd', 'notes.swp'));
    await waitFor('the file d on disk', async () => ((await readFile(join(w!.dir, 'd'), 'utf8').catch(() => null)) === 'file d\n' ? true : undefined), 45_000);
    await waitFor('the warning gone', async () => ((await w!.status()).warnings.some((warning) => warning.includes('"d"')) ? undefined : true), 15_000);
  });
});
