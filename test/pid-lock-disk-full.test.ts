// The daemon's lock on a full home: `strata daemon` said "ENOSPC: no space left on device, write
// (INTERNAL)", naming nothing, and left an empty lock file behind. The refusal is now DISK_FULL and
// names the file whose disk is full. Needs root (a tmpfs of its own for the home).

import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StrataError } from '../engine/errors.js';
import { acquirePidLock } from '../server/pid-lock.js';
import { sh } from './mount-harness.js';

const asRoot = process.getuid?.() === 0;
let root: string;
let home: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'strata-pid-lock-full-'));
  home = join(root, 'home');
  await mkdir(home);
  if (asRoot) await sh('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'strata-test-pid-lock', home]);
});

afterAll(async () => {
  if (asRoot) await sh('umount', ['-l', home], { allowFail: true });
  await rm(root, { recursive: true, force: true });
});

describe.skipIf(!asRoot)('a pid lock on a full disk', () => {
  it('is refused as DISK_FULL naming the file, and leaves no empty lock behind', async () => {
    await sh('dd', ['if=/dev/zero', `of=${join(home, 'filler')}`, 'bs=64k'], { allowFail: true, timeoutMs: 30_000 });
    const file = join(home, 'daemon', 'daemon.pid');
    const refused = await acquirePidLock(file, () => new StrataError('DAEMON_RUNNING')).then(
      () => null,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(StrataError);
    expect((refused as StrataError).code).toBe('DISK_FULL');
    expect((refused as StrataError).message).toContain(`The disk holding ${file} is full (ENOSPC)`);
    expect(existsSync(file)).toBe(false);

    await rm(join(home, 'filler'));
    const lock = await acquirePidLock(file, () => new StrataError('DAEMON_RUNNING'));
    await lock.release();
  });
});
