// `rm F; mkdir F` (or `mv F elsewhere; mkdir F; mv elsewhere F/x`) on a mount within the settle delay of the removal: the file's deletion is recorded
// before the directory takes the name. It waited, the `rmdir F` that followed replaced its pending
// marker by the directory's, and the deletion was never recorded: the file stayed current in history,
// in later snapshots, and came back with a restore (issue 39 item 9).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject } from './mount-harness.js';

let m: MountedDir;

beforeAll(async () => {
  // A settle delay long enough that the directory always comes within it.
  m = await mountProject({ env: { STRATA_MOUNT_SETTLE_MS: '2000' } });
});

afterAll(async () => {
  await m?.dispose();
});

describe('a file removed and a directory made at its name', () => {
  it('records the deletion even when the directory goes again at once', async () => {
    await inMount(m, 'echo f > F');
    await m.idle(30_000);
    expect(await m.stat('F')).not.toBeNull();
    await inMount(m, 'rm F; mkdir F; rmdir F');
    await m.idle(30_000);
    expect(await m.stat('F')).toBeNull();
    expect((await m.history('F')).map((v) => v.kind)).toEqual(['delete', 'write']);
    expect((await inMount(m, 'ls -A')).stdout).not.toMatch(/^F$/m);
  });

  it('records the deletion and then the files made below the directory', async () => {
    await inMount(m, 'echo g > G');
    await m.idle(30_000);
    await inMount(m, 'rm G; mkdir G; echo inside > G/x');
    await m.idle(30_000);
    expect((await m.history('G')).map((v) => v.kind)).toEqual(['delete', 'write']);
    expect((await m.read('G/x')).toString()).toBe('inside\n');
  });

  it('moves a file below a directory made at its own name, as one rename (mv b c/a; mkdir b; mv c/a b/a)', async () => {
    await inMount(m, 'echo x > b; mkdir c');
    await m.idle(30_000);
    await inMount(m, 'mv b c/a; mkdir b; mv c/a b/a');
    await m.idle(30_000);
    expect((await m.read('b/a')).toString()).toBe('x\n');
    expect(await m.stat('b')).toBeNull();
    expect((await m.history('b')).map((v) => v.kind)).toEqual(['delete', 'write']);
    const status = await m.api<{ projects: Array<{ pending: number }> }>('GET', '/v1/daemon/status');
    expect(status.projects[0]!.pending).toBe(0);
  });
});
