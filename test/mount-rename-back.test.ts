// A directory renamed and renamed back before the mount recorded the first rename (found by
// fsstress, bench/mount-stress.ts). `mv d e; mv e d` within the settle delay put each file's node back at
// its engine name, which took away the gone marker the node's origin pointed to; the node kept that
// stale origin for good, so it never left the namespace, and `d`'s own directory marker waited for
// it forever: the mount's pending count stayed at 1 (`m.idle()` never returned, a snapshot waited for
// it) and the marker hid the engine's other files below `d` from the mount's listings.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject } from './mount-harness.js';

let m: MountedDir;

beforeAll(async () => {
  m = await mountProject();
});

afterAll(async () => {
  await m?.dispose();
});

describe('a directory renamed away and back within the settle delay', () => {
  it('the mount goes idle, records nothing for the round trip, and lists every file', async () => {
    await inMount(m, 'mkdir d && echo a > d/f && echo b > d/g');
    await m.idle();
    const before = (await m.history('d/f')).length;
    // One shell: both renames land well within the 100 ms settle delay.
    await inMount(m, 'mv d e && mv e d');
    await m.idle(5_000);
    expect((await inMount(m, 'ls d')).stdout).toBe('f\ng\n');
    expect((await m.read('d/f')).toString()).toBe('a\n');
    expect((await m.history('d/f')).length).toBe(before);
    expect(await m.stat('e/f')).toBeNull();
  });
});
