// `strata unmount` of an in-place mount (`strata mount DIR --import`) leaves every file with the times
// `stat` in the mount showed for it: make and rsync compare them. A real daemon, a real FUSE mount,
// real touch and stat. Times set through the mount (touch -d on a file and a link), a file written
// through the mount, and a file restored to the content the directory already held (left as it is on
// disk, but with the restore's time, as the mount showed it: else make skips a rebuild it needs). The
// index rows agree with the new stat, so watch mode and the next import take none of them for an edit.

import { execPath } from 'node:process';
import { lstat, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sameAsIndexed } from '../daemon/watch/examine.js';
import { openDaemonState } from '../daemon/state.js';
import type { VersionRecord } from '../engine/types.js';
import { MAIN } from './cli-harness.js';
import { inMount, type MountedDir, mountProject, sh, waitFor } from './mount-harness.js';

const FILES = ['a.m', 'b.txt', 'l', 'c.txt', 'untouched.txt'];

let root: string;
let m: MountedDir | null = null;

afterAll(async () => {
  await m?.dispose();
  await rm(root, { recursive: true, force: true }).catch(() => undefined);
}, 60_000);

/** `path mtime atime` of each file, in seconds to the nanosecond as stat prints them (never through a link), as a map. */
async function times(dir: string, files = FILES): Promise<Map<string, { mtime: string; atime: string }>> {
  const out = (await sh('stat', ['-c', '%n %.9Y %.9X', ...files], { cwd: dir, timeoutMs: 20_000 })).stdout;
  return new Map(
    out
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [name, mtime, atime] = line.split(' ');
        return [name!, { mtime: mtime!, atime: atime! }];
      }),
  );
}

describe('in-place unmount: file times', () => {
  it('every file gets the times the mount showed, and its index row the new stat', async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-in-place-times-'));
    const dir = join(root, 'mnt');
    await mkdir(dir);
    await sh(
      'bash',
      ['-euo', 'pipefail', '-c', "printf 'one\\n' > a.m; printf 'b\\n' > b.txt; ln -s b.txt l; printf 'u\\n' > untouched.txt; touch -h -d '2020-01-01 00:00:00' a.m b.txt l untouched.txt"],
      { cwd: dir, timeoutMs: 20_000 },
    );
    const before = await times(dir, ['a.m', 'b.txt', 'l', 'untouched.txt']);
    m = await mountProject({ root, args: ['--import'] });
    const first = (await m.history('a.m'))[0]!;

    await inMount(m, "touch -d '2023-03-03 00:00:00.123456789' b.txt; touch -h -d '2022-02-02 00:00:00' l; printf 'two\\n' > a.m; printf 'c\\n' > c.txt; touch -d '2021-05-05 00:00:00.987654321' c.txt");
    await m.idle();
    // Back to the content the directory holds under the mount: the restore is what the mount shows.
    await m.api('POST', `/v1/projects/${m.projectId}/history/restore`, { versionId: first.versionId });
    await waitFor('the restore to show in the mount', async () => ((await inMount(m!, 'cat a.m')).stdout === 'one\n' ? true : undefined), 20_000);
    await m.idle();
    const shown = await times(m.dir);
    const restored = (await m.history('a.m'))[0] as VersionRecord;
    expect(restored.kind).toBe('restore');
    expect(Number(shown.get('a.m')!.mtime) * 1000).toBeCloseTo(Date.parse(restored.timestamp), 0);
    expect(shown.get('b.txt')!.mtime).toBe(`${Date.parse('2023-03-03T00:00:00Z') / 1000}.123456789`);
    expect(shown.get('untouched.txt')!.mtime).toBe(before.get('untouched.txt')!.mtime);

    const result = await sh(execPath, [MAIN, 'unmount', dir, '--home', m.home, '--json'], { cwd: root, env: process.env, allowFail: true, timeoutMs: 60_000 });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const after = await times(dir);
    // To the nanosecond (Node's lutimes, seconds in a double, was a few hundred nanoseconds off).
    for (const path of FILES) expect(after.get(path)!.mtime, path).toBe(shown.get(path)!.mtime);
    // touch -d set both times through the mount.
    for (const path of ['b.txt', 'c.txt']) expect(after.get(path)!.atime, path).toBe(shown.get(path)!.atime);
    // A file the mount did not change keeps its own time, to the nanosecond.
    expect(after.get('untouched.txt')!.mtime).toBe(before.get('untouched.txt')!.mtime);
    // Read last: a read sets the atime (relatime).
    expect((await sh('cat', [join(dir, 'a.m')])).stdout).toBe('one\n');

    // Each file's index row vouches for it as it is now (watch mode and the next import read none again).
    const state = openDaemonState(join(m.home, 'daemon', 'state.sqlite'));
    try {
      for (const path of FILES) {
        const row = state.index.get(m.projectId, path);
        expect(row, path).toBeDefined();
        expect(sameAsIndexed(row!, await lstat(join(dir, path), { bigint: true })), path).toBe(true);
        expect(row!.contentHash, path).toBe((await m.stat(path))!.contentHash);
      }
    } finally {
      state.close();
    }
  }, 180_000);
});
