// What a restart makes of a mount killed with SIGKILL (issue 13 items 2, 3): replaying the dead
// mount's journal is idempotent — files it had captured get no second version, no empty version, and
// status does not claim to have recovered them — and the bytes of a file a tool was still writing
// (a large copy in progress) are kept as a version marked as recovered, not thrown away.

import { spawn } from 'node:child_process';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ProjectStatus } from '../daemon/project-runner.js';
import { inMount, mountProject, waitExit, waitFor } from './mount-harness.js';

const MiB = 1024 * 1024;

describe('restart after kill -9 of the mount', () => {
  it('replays nothing already captured, and keeps an unclosed file as a recovered version', async () => {
    const first = await mountProject();
    const { root } = first;
    let writer: ReturnType<typeof spawn> | undefined;
    let before: Map<string, number>;
    try {
      // a tool writing a large file, still open when the mount dies: 24 MiB written, never closed. While
      // it is open the mount's journal is never truncated, so it still holds the captured closes below.
      writer = spawn('python3', ['-c', `import sys, time\nf = open('big.bin', 'wb')\nfor i in range(24):\n    f.write(bytes([65 + i]) * ${MiB})\nf.flush()\nsys.stdout.write('ok\\n'); sys.stdout.flush()\ntime.sleep(60)\n`], {
        cwd: first.dir,
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      const staging = join(first.home, 'daemon', 'staging');
      await waitFor(
        '24 MiB in the mount\'s staging file',
        async () => {
          const sizes = await Promise.all((await readdir(staging)).filter((n) => n.endsWith('.stg')).map((n) => stat(join(staging, n)).then((s) => s.size, () => 0)));
          return sizes.some((size) => size >= 24 * MiB) ? true : undefined;
        },
        30_000,
      );
      // captured before the crash: closes of several kinds, each its own version
      await inMount(first, 'touch empty-first.txt; echo content > empty-first.txt');
      await first.idle();
      await inMount(first, 'echo v1 > twice.txt');
      await first.idle();
      await inMount(first, 'echo v2 > twice.txt; mkdir -p d && echo x > d/moved.txt && mv d/moved.txt d/here.txt');
      await first.idle();
      before = new Map();
      for (const path of ['empty-first.txt', 'twice.txt', 'd/moved.txt', 'd/here.txt']) before.set(path, (await first.history(path)).length);

      first.child.kill('SIGKILL');
      await waitExit(first.child, 10_000);
    } finally {
      writer?.kill('SIGKILL');
      if (first.child.exitCode === null && first.child.signalCode === null) first.child.kill('SIGKILL');
    }

    const second = await mountProject({ root });
    try {
      await second.idle();
      for (const [path, count] of before) expect({ path, versions: (await second.history(path)).length }).toEqual({ path, versions: count });
      expect((await second.history('twice.txt')).map((v) => v.size)).toEqual([3, 3]);

      const big = await second.history('big.bin');
      expect(big[0]!.size).toBe(24 * MiB);
      expect(big[0]!.actor.name).toMatch(/recovered after a crash/);
      const data = await second.read('big.bin');
      expect(data.subarray(23 * MiB, 23 * MiB + 4).toString()).toBe('XXXX');

      const status = await second.api<{ projects: ProjectStatus[] }>('GET', '/v1/daemon/status');
      const warnings = status.projects[0]!.warnings.join('\n');
      expect(warnings).toMatch(/kept 1 file\(s\) a previous run was still writing.*"big\.bin"/);
      expect(warnings).not.toMatch(/versioned \d+ file\(s\) a previous run had written but not yet captured/);
    } finally {
      await second.dispose();
    }
  }, 180_000);
});
