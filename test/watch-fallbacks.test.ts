// When inotify cannot be used: network filesystems (detected from /proc/self/mountinfo) and an
// exhausted watch limit fall back to polling, and say so in status.

import { watch } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createIgnoreRules } from '../daemon/capture/ignore.js';
import { MassDeleteGuard } from '../daemon/capture/guard.js';
import { detectFs, fsInfoFromMountinfo } from '../daemon/watch/fs-type.js';
import { type WatchedProject, watchProject } from './daemon-harness.js';

const MOUNTINFO = [
  '22 1 252:0 / / rw,relatime shared:1 - ext4 /dev/vda rw',
  '35 22 0:31 / /home/u/cluster rw,relatime shared:20 - nfs4 filer:/export/home rw,vers=4.2',
  '36 35 0:32 / /home/u/cluster/scratch\\040space rw - lustre 10.0.0.1@tcp:/scratch rw',
  '37 22 0:33 / /mnt/cephfs rw - ceph 10.0.0.2:/ rw',
  '38 22 0:34 / /mnt/ssh rw,nosuid - fuse.sshfs u@host:/data rw',
  '39 22 0:35 / /tmp rw - tmpfs tmpfs rw',
].join('\n');

describe('filesystem detection', () => {
  it('finds the innermost mount and flags network filesystems', () => {
    expect(fsInfoFromMountinfo(MOUNTINFO, '/home/u/cluster/thesis')).toMatchObject({ fsType: 'nfs4', network: true, mountPoint: '/home/u/cluster' });
    expect(fsInfoFromMountinfo(MOUNTINFO, '/home/u/cluster/scratch space/run1')).toMatchObject({ fsType: 'lustre', network: true });
    expect(fsInfoFromMountinfo(MOUNTINFO, '/home/u/cluster/scratchy')).toMatchObject({ fsType: 'nfs4' });
    expect(fsInfoFromMountinfo(MOUNTINFO, '/mnt/cephfs/x')).toMatchObject({ fsType: 'ceph', network: true });
    expect(fsInfoFromMountinfo(MOUNTINFO, '/mnt/ssh')).toMatchObject({ fsType: 'fuse.sshfs', network: true, source: 'u@host:/data' });
    expect(fsInfoFromMountinfo(MOUNTINFO, '/tmp/a')).toMatchObject({ fsType: 'tmpfs', network: false });
    expect(fsInfoFromMountinfo(MOUNTINFO, '/home/u/local')).toMatchObject({ fsType: 'ext4', network: false, mountPoint: '/' });
  });

  it('reads this machine\'s mountinfo', async () => {
    const info = await detectFs('/');
    expect(info?.mountPoint).toBe('/');
    expect(info?.fsType).toMatch(/^[a-z0-9.]+$/);
  });
});

describe('ignore rules and the guard, alone', () => {
  it('ignores .strata/ always and the defaults; .strataignore adds patterns and negations', async () => {
    const rules = createIgnoreRules('/nonexistent-dir-for-test');
    for (const path of ['.strata/project.json', '.git/HEAD', 'a/.b.swp', 'x~', '.#lock', '#auto#', 'd/4913', '.DS_Store', 'p/__pycache__/m.pyc', 'm.pyc', '.~lock.doc#']) {
      expect(rules.ignores(path), path).toBe(true);
    }
    for (const path of ['a.m', 'src/main.py', 'notes.tex', 'git/file']) expect(rules.ignores(path), path).toBe(false);
    expect(rules.ignores('.git', true)).toBe(true);
    expect(rules.ignores('.strata', true)).toBe(true);
  });

  it('trips only above 25% and 20 files within the window', () => {
    const guard = new MassDeleteGuard();
    expect(guard.note(19, 0, 20)).toBe(false); // fewer than 20
    const big = new MassDeleteGuard();
    expect(big.note(25, 0, 100)).toBe(false); // exactly 25%
    expect(big.note(1, 10, 100)).toBe(true);
    expect(big.state).toMatchObject({ tripped: true });
    const slow = new MassDeleteGuard();
    expect(slow.note(20, 0, 100)).toBe(false);
    expect(slow.note(10, 6_000, 100)).toBe(false); // 30 in all, but the first 20 left the 5 s window
    expect(slow.note(16, 7_000, 100)).toBe(true); // 26 within 5 s
    slow.reset(10_000, 30_000);
    expect(slow.note(40, 10_000, 40)).toBe(false); // grace after a reset
  });
});

describe('polling fallbacks', () => {
  let w: WatchedProject | undefined;
  afterEach(async () => {
    await w?.dispose();
    w = undefined;
  });

  it('an exhausted inotify limit (ENOSPC) switches to polling, explains the sysctl, and keeps capturing', async () => {
    let calls = 0;
    // The kernel limit is machine-wide (fs.inotify.max_user_watches); lowering it here would break
    // every other process on the machine, so the refusal is injected at the one place it surfaces.
    const limited: typeof watch = ((path: string, options: unknown, listener: unknown) => {
      calls += 1;
      if (calls > 2) throw Object.assign(new Error('ENOSPC: System limit for number of file watchers reached'), { code: 'ENOSPC' });
      return (watch as unknown as (p: string, o: unknown, l: unknown) => ReturnType<typeof watch>)(path, options, listener);
    }) as typeof watch;
    w = await watchProject({
      watch: { watch: limited, pollMs: 200 },
      prepare: async (dir) => {
        for (const sub of ['a', 'b', 'c', 'd']) await mkdir(join(dir, sub, 'deep'), { recursive: true });
      },
    });
    await w.idle();
    const status = await w.status();
    expect(status.backend).toBe('polling');
    expect(status.warnings.join('\n')).toMatch(/fs\.inotify\.max_user_watches=\d+/);
    expect(status.warnings.join('\n')).toMatch(/sudo sysctl/);
    await writeFile(join(w.dir, 'c', 'deep', 'x.txt'), 'polled\n');
    await w.idle();
    const history = await (async () => {
      for (let i = 0; i < 50; i++) {
        const h = await w!.history('c/deep/x.txt');
        if (h.length > 0) return h;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return [];
    })();
    expect(history).toHaveLength(1);
  });

  it('polling mode (network filesystems) captures writes and deletes', async () => {
    w = await watchProject({ watch: { forcePolling: true, pollMs: 200 } });
    await w.idle();
    expect((await w.status()).backend).toBe('polling');
    await writeFile(join(w.dir, 'n.txt'), 'one\n');
    const poll = async (path: string, count: number) => {
      for (let i = 0; i < 60; i++) {
        const h = await w!.history(path);
        if (h.length >= count) return h;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return w!.history(path);
    };
    expect(await poll('n.txt', 1)).toHaveLength(1);
    await writeFile(join(w.dir, 'n.txt'), 'two\n');
    expect(await poll('n.txt', 2)).toHaveLength(2);
    await rm(join(w.dir, 'n.txt'));
    expect((await poll('n.txt', 3))[0]!.kind).toBe('delete');
  });
});
