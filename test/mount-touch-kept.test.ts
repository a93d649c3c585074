// `touch f` (the time now) on a versioned file of the mount is kept across a restart, as a time set to
// the past is (`touch -d`). The mount keeps a time only when it is not the one a file shows without
// it (its version's timestamp); it compared the time with now instead, so a touch of an older file
// kept nothing, and after a restart the file showed its last version's time again: `make` rebuilt
// what was up to date, or skipped what was not (issue 39 item 3).
import { afterAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject, waitFor } from './mount-harness.js';

let m: MountedDir | undefined;

afterAll(async () => {
  await m?.dispose();
});

const mtime = async (path: string) => Number((await inMount(m!, `stat -c %Y ${path}`)).stdout.trim());

describe('a touch of a versioned file', () => {
  it('keeps its time across a restart', async () => {
    m = await mountProject();
    const root = m.root;
    await inMount(m, 'echo v1 > f; echo v1 > g');
    await m.idle();
    const versionAt = Date.parse((await m.stat('f'))!.timestamp);
    // Later than the version by more than the moments a capture takes.
    await waitFor('the version to be a few seconds old', async () => (Date.now() - versionAt > 3_500 ? true : undefined), 30_000);
    await inMount(m, 'touch f');
    const touched = await mtime('f');
    expect(touched * 1000).toBeGreaterThan(versionAt + 2_500);
    const untouched = await mtime('g');
    expect(await m.stop()).toBe(0);
    m = await mountProject({ root });
    expect(await mtime('f')).toBe(touched);
    // Untouched: the time of its write, as the mount showed it before (kept since times are exact to
    // the nanosecond; its version's timestamp is the capture's, a settle delay later, and compared in
    // whole seconds the two differed whenever a second began in between).
    expect(await mtime('g')).toBe(untouched);
  }, 120_000);
});
