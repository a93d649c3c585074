// A lock whose pid was reused after a crash (kill -9, power loss and a reboot) by another user's
// process: the lock counted as held, so the home's daemon refused to start (DAEMON_RUNNING) until the
// file was deleted by hand, and the CLI sent the owner key to whatever listened at the daemon's
// recorded address. The lock's file belongs to its writer's user; a process of another user is not
// its owner. Needs root (a lock file of another user's).

import { type ChildProcess, spawn } from 'node:child_process';
import { chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StrataError } from '../engine/errors.js';
import { acquirePidLock, pidLockHolder } from '../server/pid-lock.js';

const asRoot = process.getuid?.() === 0;
const NOBODY = 65534;
let root: string;
let other: ChildProcess | undefined;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'strata-pid-lock-reused-'));
});

afterAll(async () => {
  other?.kill('SIGKILL');
  await rm(root, { recursive: true, force: true });
});

describe.skipIf(!asRoot)('a pid lock whose pid now belongs to another user', () => {
  it('is stale: nobody holds it, and the next owner takes it over', async () => {
    // A live node process of root's stands for the process that got the crashed daemon's pid.
    other = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    const pid = other.pid!;
    const dir = join(root, 'daemon');
    await mkdir(dir);
    const file = join(dir, 'daemon.lock');
    await writeFile(file, `${pid}\n`, { mode: 0o600 });
    // The crashed daemon was another user's: its lock file is theirs.
    await chown(file, NOBODY, NOBODY);

    expect(pidLockHolder(file)).toBeNull();
    const lock = await acquirePidLock(file, () => new StrataError('DAEMON_RUNNING'));
    expect((await readFile(file, 'utf8')).split('\n')[0]).toBe(String(process.pid));
    await lock.release();
  });

  it('still counts a live process of the lock file’s own user', async () => {
    const dir = join(root, 'daemon2');
    await mkdir(dir);
    const file = join(dir, 'daemon.lock');
    const live = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      await writeFile(file, `${live.pid}\n`, { mode: 0o600 });
      expect(pidLockHolder(file)).toEqual({ pid: live.pid, holder: '' });
      const refused = await acquirePidLock(file, () => new StrataError('DAEMON_RUNNING')).then(
        () => null,
        (error: unknown) => error,
      );
      expect((refused as StrataError).code).toBe('DAEMON_RUNNING');
    } finally {
      live.kill('SIGKILL');
    }
  });
});
