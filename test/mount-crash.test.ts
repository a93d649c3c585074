// A mount process killed with SIGKILL while tools write through it: processes using the mount get
// errors instead of hanging, the next `strata mount` cleans the dead mount up and serves again, and
// files that were closed or fsynced before the kill are versioned (replayed from the mount's journal
// and its journaled staging files).
// Repeated, because a crash at a different instant must be just as harmless. SIGTERM unmounts cleanly.

import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountsAt } from '../daemon/mount/stale-mount.js';
import { forceUnmount, inMount, type MountedDir, mountProject, sh, sleep, waitExit } from './mount-harness.js';

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'strata-mount-crash-'));
});

afterAll(async () => {
  await forceUnmount(join(root, 'mnt'));
  await rm(root, { recursive: true, force: true });
});

describe('kill -9 of the mount process', () => {
  it('never hangs anything, cleans the stale mount at the next start, and loses no closed or fsynced file', async () => {
    for (let round = 0; round < 3; round++) {
      const m: MountedDir = await mountProject({ root });
      try {
        if (round === 0) expect(m.stderr()).not.toMatch(/stale mount/);
        await inMount(m, `mkdir -p r${round}`);
        // A writer storm that is still running when the process dies.
        const storm = spawn('bash', ['-c', `for i in $(seq 1 100000); do echo "line $i" > r${round}/storm-$((i % 50)).txt || exit 0; done`], {
          cwd: m.dir,
          stdio: 'ignore',
        });
        // A large file closed just before the kill (its capture is still in the settle delay), and one
        // fsynced and still open.
        const script = `
dd if=/dev/urandom of=r${round}/closed.bin bs=256K count=8 status=none
sha256sum r${round}/closed.bin | cut -d' ' -f1 > ${root}/closed-${round}.sum
python3 -c "
import os, sys, time
f = open('r${round}/synced.bin', 'wb')
f.write(b'S' * 300000)
f.flush(); os.fsync(f.fileno())
open('${root}/synced-${round}', 'w').write('ok')
time.sleep(30)
" &
HOLDER=$!
for i in $(seq 1 200); do sleep 0.05; test -s ${root}/synced-${round} && break; done
# Small files closed right before the kill: still in memory, waiting for their capture.
for i in $(seq 1 100); do echo "small $i" > r${round}/small-$i.txt; done
kill -9 ${m.child.pid}
kill $HOLDER 2>/dev/null || true
wait || true
`;
        await sh('bash', ['-c', script], { cwd: m.dir, timeoutMs: 60_000, allowFail: true });
        await waitExit(m.child, 10_000);
        // Whatever used the mount must come back with an error, not hang.
        const exited = await Promise.race([waitExit(storm, 10_000).then(() => true), sleep(12_000).then(() => false)]);
        expect(exited).toBe(true);
        const probe = await sh('ls', [m.dir], { allowFail: true, timeoutMs: 10_000 });
        expect(probe.stderr).toMatch(/Transport endpoint is not connected|No such file|not connected/);
      } finally {
        if (m.child.exitCode === null && m.child.signalCode === null) m.child.kill('SIGKILL');
      }
    }

    // The next start cleans up and versions what the dead processes had closed or fsynced.
    const m = await mountProject({ root });
    try {
      expect(m.stderr()).toMatch(/stale mount/);
      for (let round = 0; round < 3; round++) {
        const expected = (await sh('cat', [join(root, `closed-${round}.sum`)])).stdout.trim();
        const listed = await inMount(m, `sha256sum r${round}/closed.bin | cut -d' ' -f1; stat -c %s r${round}/synced.bin`);
        expect(listed.stdout).toBe(`${expected}\n300000\n`);
        expect((await m.stat(`r${round}/closed.bin`))?.size).toBe(2 * 1024 * 1024);
        expect((await m.stat(`r${round}/synced.bin`))?.size).toBe(300000);
        const small = await inMount(m, `cat r${round}/small-1.txt r${round}/small-100.txt`);
        expect(small.stdout).toBe('small 1\nsmall 100\n');
        for (const i of [1, 37, 100]) expect((await m.read(`r${round}/small-${i}.txt`)).toString()).toBe(`small ${i}\n`);
      }
      const fsck = await m.api<{ ok: boolean; missing: unknown[]; corrupt: unknown[] }>('POST', '/v1/admin/fsck', {});
      expect(fsck).toMatchObject({ ok: true, missing: [], corrupt: [] });
      const staging = (await readdir(join(m.home, 'daemon', 'staging'))).filter((name) => !name.startsWith(`${m.child.pid}-`));
      expect(staging).toEqual([]);
    } finally {
      await m.dispose();
    }
    // Three kill/restart rounds of real work: well over the default per-test limit on a loaded 2-core
    // machine (it timed out at 60 s in the full suite). Every wait inside is on a condition.
  }, 240_000);
});

describe('SIGTERM', () => {
  it('unmounts cleanly, exits 0, and versions what was pending', async () => {
    const m = await mountProject({ root: await mkdtemp(join(tmpdir(), 'strata-mount-term-')) });
    try {
      await inMount(m, 'echo pending > last.txt');
      expect(await m.stop()).toBe(0);
      expect(await mountsAt(m.dir)).toEqual([]);
      const again = await mountProject({ root: m.root });
      try {
        expect((await again.read('last.txt')).toString()).toBe('pending\n');
      } finally {
        await again.dispose();
      }
    } finally {
      await m.dispose();
    }
  });
});
