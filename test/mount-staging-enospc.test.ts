// A large file (past the 64 KiB kept in memory, so staged) whose write through the mount failed with
// ENOSPC on a full home. The staging worker dropped the file from its table at the capture anyway:
// reading it through the mount then gave EBADF, its capture failed with "EBADF unknown staging file N"
// every 30 s forever, `pending` never drained, and a restart lost it. Now the file keeps what was
// written before the failure (the tool was told at its write or close), readable, and is versioned
// once the home has room again. Needs root (a tmpfs of its own for the home).

import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forceUnmount, inMount, type MountedDir, mountProject, sh } from './mount-harness.js';

const asRoot = process.getuid?.() === 0;
let root: string;
let home: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'strata-mount-enospc-'));
  home = join(root, 'home');
  await mkdir(home);
  if (asRoot) await sh('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'strata-test-enospc', home]);
});

afterAll(async () => {
  await forceUnmount(join(root, 'mnt'));
  if (asRoot) await sh('umount', ['-l', home], { allowFail: true });
  await rm(root, { recursive: true, force: true });
});

describe.skipIf(!asRoot)('a staged write that failed with ENOSPC', () => {
  it('keeps the file readable and versions what it holds once there is room', async () => {
    let m: MountedDir = await mountProject({ root });
    try {
      await inMount(m, 'echo before > before.txt');
      await m.idle();
      // Full, then 3 MiB free: an 8 MiB write gets part of the way.
      await sh('dd', ['if=/dev/zero', `of=${join(home, 'filler')}`, 'bs=1M'], { allowFail: true, timeoutMs: 30_000 });
      await sh('truncate', ['-s', '-3M', join(home, 'filler')]);
      const write = await inMount(m, `if head -c 8M /dev/urandom > big.bin; then echo written; else echo failed; fi`, 60_000);
      expect(write.stdout.trim()).toBe('failed');
      expect(write.stderr).toMatch(/No space left on device/);

      // Readable through the mount (a reader's close is not failed either): the bytes written before
      // the failure.
      const read = Number((await inMount(m, 'cat big.bin | wc -c')).stdout.trim());
      expect(read).toBeGreaterThan(0);
      expect(read).toBeLessThan(8 << 20);
      const bytes = (await inMount(m, 'sha256sum < big.bin')).stdout;

      // Room again: its capture goes through, nothing stays pending, and it is the size it holds.
      await rm(join(home, 'filler'));
      await m.idle(60_000);
      expect((await m.stat('big.bin'))?.size).toBe(read);
      expect((await inMount(m, 'stat -c %s big.bin; sha256sum < big.bin')).stdout).toBe(`${read}\n${bytes}`);

      // And it is there after a restart.
      await m.stop();
      m = await mountProject({ root });
      expect((await inMount(m, 'sha256sum < big.bin; cat before.txt')).stdout).toBe(`${bytes}before\n`);
    } finally {
      await m.dispose();
    }
  }, 180_000);
});
