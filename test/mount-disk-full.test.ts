// The home on a full filesystem (a workstation's disk filling up under a simulation's results): small
// files written through the mount live in memory until their capture, and their close is journaled so
// a crash loses nothing. When the journal cannot be written, the close must not be answered 0: the
// tool gets ENOSPC, or the file is versioned first. Before, `tar x` into a full home was told ~200
// files were written, and the next kill -9 lost them all. Needs root (a tmpfs of its own for the home).

import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forceUnmount, inMount, type MountedDir, mountProject, sh, waitExit } from './mount-harness.js';

const asRoot = process.getuid?.() === 0;
let root: string;
let home: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'strata-mount-full-'));
  home = join(root, 'home');
  await mkdir(home);
  if (asRoot) await sh('mount', ['-t', 'tmpfs', '-o', 'size=48m', 'strata-test-full', home]);
});

afterAll(async () => {
  await forceUnmount(join(root, 'mnt'));
  if (asRoot) await sh('umount', ['-l', home], { allowFail: true });
  await rm(root, { recursive: true, force: true });
});

describe.skipIf(!asRoot)('a mount whose home is full', () => {
  it('never answers a close 0 whose bytes a kill -9 then loses, and journals again once there is room', async () => {
    let m: MountedDir = await mountProject({ root });
    try {
      await inMount(m, 'echo before > before.txt');
      await m.idle();
      await sh('dd', ['if=/dev/zero', `of=${join(home, 'filler')}`, 'bs=1M'], { allowFail: true, timeoutMs: 30_000 });
      // What a tool is told: each file whose write and close succeeded is listed outside the home.
      // (Not bash's `echo > f`: bash does not check the close of a redirection.)
      const told = await inMount(m, `for i in $(seq 1 60); do printf 'small %s\\n' $i > ${root}/src; if cp ${root}/src f$i.txt; then echo $i >> ${root}/ok.txt; fi; done; touch ${root}/ok.txt`, 60_000);
      const ok = (await readFile(join(root, 'ok.txt'), 'utf8')).split('\n').filter((line) => line !== '');
      if (ok.length < 60) expect(told.stderr).toMatch(/No space left on device/);

      // Room again, without a restart: a close is journaled again (the log was not left with a torn
      // record that would hide the records after it at the next start).
      await rm(join(home, 'filler'));
      await inMount(m, 'echo after > after.txt');
      m.child.kill('SIGKILL');
      await waitExit(m.child, 10_000);
      await forceUnmount(m.dir);

      m = await mountProject({ root });
      for (const i of ok) expect((await m.read(`f${i}.txt`)).toString()).toBe(`small ${i}\n`);
      const listed = await inMount(m, `cat before.txt after.txt${ok.map((i) => ` f${i}.txt`).join('')}`);
      expect(listed.stdout).toBe(`before\nafter\n${ok.map((i) => `small ${i}\n`).join('')}`);
      expect((await m.read('after.txt')).toString()).toBe('after\n');
    } finally {
      await m.dispose();
    }
  }, 120_000);
});
