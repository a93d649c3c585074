// A file fsynced mid-write and still open when the mount dies (a database, a log, a copy that syncs
// as it goes) is a file a tool was still writing: the next start keeps its bytes as a version marked
// as recovered, with the warning. The fsync rewrote the staging file's record without its `open`
// mark, so it came back as an ordinary version, as if the tool had closed it.
//
// A small file (kept in memory, not staged) fsynced mid-write goes to the mount's journal instead of
// becoming a version (an fsync asks for durability): the same holds for it, and only its last fsynced
// state counts.

import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { ProjectStatus } from '../daemon/project-runner.js';
import { type MountedDir, mountProject, waitExit, waitFor } from './mount-harness.js';

const MiB = 1024 * 1024;

/**
 * Mounts, runs the Python `script` in the mount until it prints `ok` (its file still open), runs
 * `whileHeld`, then kills the mount with SIGKILL. Returns the mount's root, for the restart.
 */
async function killWhileHeld(script: string, whileHeld: (mounted: MountedDir) => Promise<void> = async () => {}): Promise<string> {
  const first = await mountProject();
  let writer: ReturnType<typeof spawn> | undefined;
  try {
    writer = spawn('python3', ['-c', `${script}\nsys.stdout.write('ok\\n'); sys.stdout.flush()\ntime.sleep(60)\n`], { cwd: first.dir, stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    writer.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    await waitFor('the writer past its fsync', async () => (out.includes('ok') ? true : undefined), 30_000);
    await whileHeld(first);
    first.child.kill('SIGKILL');
    await waitExit(first.child, 10_000);
  } finally {
    writer?.kill('SIGKILL');
    if (first.child.exitCode === null && first.child.signalCode === null) first.child.kill('SIGKILL');
  }
  return first.root;
}

/** After the restart: `path` is one version of `size` bytes, marked recovered, and status warns of it. */
async function expectRecovered(root: string, path: string, size: number, check: (mounted: MountedDir) => Promise<void> = async () => {}): Promise<void> {
  const second = await mountProject({ root });
  try {
    await second.idle();
    const versions = await second.history(path);
    expect(versions.map((version) => version.size)).toEqual([size]);
    expect(versions[0]!.actor.name).toMatch(/recovered after a crash/);
    await check(second);
    const status = await second.api<{ projects: ProjectStatus[] }>('GET', '/v1/daemon/status');
    expect(status.projects[0]!.warnings.join('\n')).toMatch(new RegExp(`kept 1 file\\(s\\) a previous run was still writing.*"${path.replace('.', '\\.')}"`));
  } finally {
    await second.dispose();
  }
}

describe('restart after kill -9 of the mount, a file fsynced and still open', () => {
  it('keeps it as a recovered version, not as one the tool closed', async () => {
    // 8 MiB (a staging file, not memory), fsync, 1 MiB more, never closed
    const root = await killWhileHeld(`import os, sys, time\nf = open('db.bin', 'wb')\nf.write(b'A' * ${8 * MiB})\nf.flush()\nos.fsync(f.fileno())\nf.write(b'B' * ${MiB})\nf.flush()`);
    await expectRecovered(root, 'db.bin', 9 * MiB);
  }, 120_000);

  it('a small file fsynced twice and still open: its last fsynced bytes come back as one recovered version', async () => {
    const root = await killWhileHeld(
      `import os, sys, time\nf = open('small.db', 'wb')\nf.write(b'one\\n'); f.flush(); os.fsync(f.fileno())\nf.write(b'two\\n'); f.flush(); os.fsync(f.fileno())\nf.write(b'unsynced\\n'); f.flush()`,
      // Durable, not a version: nothing in history while the writer holds the file.
      async (first) => expect(await first.history('small.db')).toEqual([]),
    );
    // What the tool had fsynced at least; what it wrote after may have reached the mount or not.
    await expectRecovered(root, 'small.db', 8, async (second) => expect((await second.read('small.db')).toString()).toBe('one\ntwo\n'));
  }, 120_000);
});
