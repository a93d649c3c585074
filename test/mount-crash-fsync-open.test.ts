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
import { mountProject, waitExit, waitFor } from './mount-harness.js';

const MiB = 1024 * 1024;

describe('restart after kill -9 of the mount, a file fsynced and still open', () => {
  it('keeps it as a recovered version, not as one the tool closed', async () => {
    const first = await mountProject();
    const { root } = first;
    let writer: ReturnType<typeof spawn> | undefined;
    try {
      // 8 MiB (a staging file, not memory), fsync, 1 MiB more, never closed
      writer = spawn('python3', ['-c', `import os, sys, time\nf = open('db.bin', 'wb')\nf.write(b'A' * ${8 * MiB})\nf.flush()\nos.fsync(f.fileno())\nf.write(b'B' * ${MiB})\nf.flush()\nsys.stdout.write('ok\\n'); sys.stdout.flush()\ntime.sleep(60)\n`], {
        cwd: first.dir,
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      let out = '';
      writer.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
      });
      await waitFor('the writer past its fsync', async () => (out.includes('ok') ? true : undefined), 30_000);
      first.child.kill('SIGKILL');
      await waitExit(first.child, 10_000);
    } finally {
      writer?.kill('SIGKILL');
      if (first.child.exitCode === null && first.child.signalCode === null) first.child.kill('SIGKILL');
    }

    const second = await mountProject({ root });
    try {
      await second.idle();
      const versions = await second.history('db.bin');
      expect(versions.length).toBe(1);
      expect(versions[0]!.size).toBe(9 * MiB);
      expect(versions[0]!.actor.name).toMatch(/recovered after a crash/);
      const status = await second.api<{ projects: ProjectStatus[] }>('GET', '/v1/daemon/status');
      expect(status.projects[0]!.warnings.join('\n')).toMatch(/kept 1 file\(s\) a previous run was still writing.*"db\.bin"/);
    } finally {
      await second.dispose();
    }
  }, 120_000);

  it('a small file fsynced twice and still open: its last fsynced bytes come back as one recovered version', async () => {
    const first = await mountProject();
    const { root } = first;
    let writer: ReturnType<typeof spawn> | undefined;
    try {
      writer = spawn('python3', ['-c', `import os, sys, time\nf = open('small.db', 'wb')\nf.write(b'one\\n'); f.flush(); os.fsync(f.fileno())\nf.write(b'two\\n'); f.flush(); os.fsync(f.fileno())\nf.write(b'unsynced\\n'); f.flush()\nsys.stdout.write('ok\\n'); sys.stdout.flush()\ntime.sleep(60)\n`], {
        cwd: first.dir,
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      let out = '';
      writer.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
      });
      await waitFor('the writer past its fsyncs', async () => (out.includes('ok') ? true : undefined), 30_000);
      // Durable, not a version: nothing in history while the writer holds the file.
      expect(await first.history('small.db')).toEqual([]);
      first.child.kill('SIGKILL');
      await waitExit(first.child, 10_000);
    } finally {
      writer?.kill('SIGKILL');
      if (first.child.exitCode === null && first.child.signalCode === null) first.child.kill('SIGKILL');
    }

    const second = await mountProject({ root });
    try {
      await second.idle();
      const versions = await second.history('small.db');
      expect(versions.map((version) => version.size)).toEqual([8]);
      expect(versions[0]!.actor.name).toMatch(/recovered after a crash/);
      // What the tool had fsynced at least; what it wrote after may have reached the mount or not.
      expect((await second.read('small.db')).toString()).toBe('one\ntwo\n');
      const status = await second.api<{ projects: ProjectStatus[] }>('GET', '/v1/daemon/status');
      expect(status.projects[0]!.warnings.join('\n')).toMatch(/kept 1 file\(s\) a previous run was still writing.*"small\.db"/);
    } finally {
      await second.dispose();
    }
  }, 120_000);
});
