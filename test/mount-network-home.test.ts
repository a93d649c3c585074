// A mount whose home is on a network filesystem stages on this machine's disk (issue 38 item 14:
// with the home on NFS, `tar x` of 3,000 files through a mount took 6.4 s against 1.7 s). The home
// here is a bindfs (FUSE) view mounted with `subtype=juicefs`, which mountinfo then reports as a JuiceFS
// client's mount (fuse.juicefs, a network filesystem); the kernel here has no NFS client. Staging files are
// then on another filesystem than the store: finished files are copied in, not renamed, and a file
// moved from an ignored name to a versioned one crosses filesystems too.

import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { DaemonStatus } from '../daemon/daemon.js';
import { inMount, mountProject, sh } from './mount-harness.js';

const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');

describe('a mount with its home on a network filesystem', () => {
  it('stages on local disk, versions large and small files through the cross-device move, and says where it stages', async () => {
    const root = await mkdtemp(join(tmpdir(), 'strata-nethome-'));
    const backing = join(root, 'home-backing');
    const home = join(root, 'home');
    await mkdir(backing);
    await mkdir(home);
    await sh('bindfs', ['-o', 'subtype=juicefs', backing, home]);
    let mounted: Awaited<ReturnType<typeof mountProject>> | undefined;
    let localStaging: string | undefined;
    try {
      // A home whose locks stay on this client is claimed twice here (init, then the daemon), each
      // claim reading its record back after a moment (home-claim-keeper.ts): slower to come up.
      mounted = await mountProject({ root, timeoutMs: 90_000 });
      const status = await mounted.api<DaemonStatus>('GET', '/v1/daemon/status');
      localStaging = status.daemon.staging?.dir;
      expect(status.daemon.homeClaim?.network).toBe(`fuse.juicefs (${backing})`);
      expect(status.daemon.staging?.where).toBe('local');
      expect(status.daemon.staging?.dir).toMatch(/\/strata-\d+\/[0-9a-f]{16}\/staging$/);
      expect(status.daemon.staging?.dir.startsWith(home)).toBe(false);

      await inMount(
        mounted,
        [
          'head -c 3145728 /dev/urandom > big.bin',
          'mkdir small',
          'for i in $(seq 1 40); do echo "file $i" > small/f$i.txt; done',
          // An ignored name (kept in the home's backing directory) renamed to a versioned one, with
          // rename(2) itself: mv would hide an EXDEV by copying.
          'head -c 200000 /dev/urandom > .draft.swp',
          `python3 -c "import os; os.rename('.draft.swp', 'draft.dat')"`,
        ].join('\n'),
      );
      await mounted.idle(60_000);
      const big = await inMount(mounted, 'sha256sum big.bin draft.dat');
      const [bigSum, draftSum] = big.stdout.split('\n').map((line) => line.split(' ')[0]);
      expect(sha(await mounted.read('big.bin'))).toBe(bigSum);
      expect(sha(await mounted.read('draft.dat'))).toBe(draftSum);
      expect((await mounted.stat('big.bin'))?.size).toBe(3145728);
      expect((await mounted.read('small/f40.txt')).toString()).toBe('file 40\n');
      expect((await mounted.history('draft.dat')).length).toBe(1);
      // Nothing left behind in either staging place once everything is versioned.
      const local = await sh('find', [status.daemon.staging!.dir, '-name', '*.stg']);
      expect(local.stdout).toBe('');

      expect(await mounted.stop()).toBe(0);
      const fsck = await sh(process.execPath, [join(import.meta.dirname, '..', 'dist', 'cli', 'main.js'), 'fsck', '--home', home], { timeoutMs: 60_000 });
      expect(fsck.stdout).toContain(': ok');
    } finally {
      await mounted?.dispose();
      await sh('fusermount', ['-uz', home], { allowFail: true });
      await rm(root, { recursive: true, force: true });
      // /var/tmp/strata-<uid>/<home key>: this home's, and the home is gone.
      if (localStaging !== undefined && !localStaging.startsWith(root)) await rm(dirname(localStaging), { recursive: true, force: true });
    }
  }, 240_000);
});
