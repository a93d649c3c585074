// `rm F; mkdir F` (or `mv F elsewhere; mkdir F; mv elsewhere F/x`) on a mount within the settle delay of the removal: the file's deletion is recorded
// before the directory takes the name. It waited, the `rmdir F` that followed replaced its pending
// marker by the directory's, and the deletion was never recorded: the file stayed current in history,
// in later snapshots, and came back with a restore (issue 39 item 9).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject, sh, waitFor } from './mount-harness.js';

let m: MountedDir;

beforeAll(async () => {
  // A settle delay long enough that the directory always comes within it.
  m = await mountProject({ env: { STRATA_MOUNT_SETTLE_MS: '2000' } });
});

afterAll(async () => {
  await m?.dispose();
});

/** What the mount still has to record (the status's count). */
const pending = async () => (await m.api<{ projects: Array<{ pending: number }> }>('GET', '/v1/daemon/status')).projects[0]!.pending;

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
    expect(await pending()).toBe(0);
  });

  it('records a file moved away before a directory at its name goes again (mv H J; mkdir H; rmdir H), and files later made below H', async () => {
    // The move's marker at H was replaced by the directory's at `rmdir H`: the rename was never
    // recorded (J became a new file with no history, H stayed in the engine), and every file later
    // made below H was refused for good ("'H' is a file"): the mount never went idle (fsstress).
    await inMount(m, 'echo h > H');
    await m.idle(30_000);
    await inMount(m, 'mv H J; mkdir H; rmdir H; mkdir H; echo below > H/k');
    await m.idle(30_000);
    expect((await m.read('J')).toString()).toBe('h\n');
    expect((await m.read('H/k')).toString()).toBe('below\n');
    expect((await m.history('H')).map((v) => v.kind)).toEqual(['delete', 'write']);
    expect((await m.history('J')).map((v) => v.kind)).toEqual(['write']);
    expect(await pending()).toBe(0);
  });

  it('records a move that the engine refused at first, though a directory took its old name and went (mv Q R; mkdir Q; mv P Q/x; mkdir P; rmdir P)', async () => {
    // `rmdir P` records P's move first, which the engine refuses while it still has the file Q (its
    // move to R waits for the settle delay). The directory's marker then replaced the move's: the move
    // was never recorded, and P came back as a file once the marker went (fsstress, one worker).
    await inMount(m, 'echo one > P1; echo two > Q1');
    await m.idle(30_000);
    await inMount(m, 'mv Q1 R1; mkdir Q1; mv P1 Q1/x; mkdir P1; rmdir P1');
    await m.idle(30_000);
    expect((await m.read('Q1/x')).toString()).toBe('one\n');
    expect((await m.read('R1')).toString()).toBe('two\n');
    expect(await m.stat('P1')).toBeNull();
    expect((await inMount(m, 'ls -A')).stdout).not.toMatch(/^P1$/m);
    expect((await m.history('Q1/x')).map((v) => v.kind)).toEqual(['write']);
    expect(await pending()).toBe(0);
  });

  it('lists a file recorded in a directory made again while the marker of the old directory still stands', async () => {
    // The old `d` is recorded as moved to `e` file by file; until then its marker hides the engine's
    // listing of `d`, and a file made in the new `d` vanished from it once recorded (ENOENT, and
    // `mkdir d/b` took its name; fsstress seed 3, one worker). A writer still open in the new `d`
    // keeps the marker standing; a change from elsewhere in `d` makes the mount read the listing again.
    await inMount(m, 'mkdir d; echo a > d/a');
    await m.idle(30_000);
    await inMount(m, 'mv d e; mkdir d');
    const writer = sh('python3', ['-c', "import time; f = open('d/held', 'w'); f.write('w'); f.flush(); time.sleep(20)"], { cwd: m.dir, timeoutMs: 60_000, allowFail: true });
    try {
      await waitFor('the writer to open d/held', async () => ((await inMount(m, 'ls -A d')).stdout.includes('held') ? true : undefined), 10_000);
      await inMount(m, 'echo b > d/b');
      await waitFor('d/b recorded', async () => ((await m.stat('d/b')) === null ? undefined : true), 30_000);
      await m.api('PUT', `/v1/projects/${m.projectId}/fs/write?path=${encodeURIComponent('d/c')}`, 'from elsewhere');
      await waitFor('the mount to list d/b', async () => ((await inMount(m, 'ls -A d')).stdout.split('\n').includes('b') ? true : undefined), 10_000).catch(() => undefined);
      expect((await inMount(m, 'ls -A d')).stdout.split('\n')).toContain('b');
      expect((await inMount(m, 'cat d/b')).stdout).toBe('b\n');
    } finally {
      await sh('pkill', ['-f', 'd/held'], { allowFail: true }).catch(() => undefined);
      await writer;
    }
    await m.idle(30_000);
    expect((await m.read('e/a')).toString()).toBe('a\n');
  });

  it('records a file moved away before its name, now a directory, is moved on (mv P Q; mkdir P; mv P R)', async () => {
    await inMount(m, 'echo p > P');
    await m.idle(30_000);
    await inMount(m, 'mv P Q; mkdir P; echo r > P/s; mv P R; mkdir P; echo t > P/u');
    await m.idle(30_000);
    expect((await m.read('Q')).toString()).toBe('p\n');
    expect((await m.read('R/s')).toString()).toBe('r\n');
    expect((await m.read('P/u')).toString()).toBe('t\n');
    expect((await m.history('P')).map((v) => v.kind)).toEqual(['delete', 'write']);
    expect(await pending()).toBe(0);
  });
});
