// A full disk (or quota) under the home is the user's to fix, so it is said as such: 507 DISK_FULL with
// words that say what to do, on the control API and in the CLI. It was STORAGE_ERROR, a 500 whose
// message the API hides ("The storage backend failed"), and files written with writeFileAtomic
// (daemon.json, credentials) said "Internal error". Nothing is recorded by the refused request, and the
// same request succeeds once there is room. Needs root (a tmpfs of its own for the home).

import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { type RunningDaemon, startDaemon } from '../daemon/daemon.js';
import { writeFileAtomic } from '../daemon/atomic-file.js';
import { isStrataError } from '../engine/errors.js';
import { sh } from './daemon-harness.js';

const asRoot = process.getuid?.() === 0;
const mounted: string[] = [];
let root: string | null = null;
let daemon: RunningDaemon | null = null;

afterAll(async () => {
  try {
    await daemon?.stop();
  } finally {
    // Whatever the daemon did, no tmpfs is left mounted (an early version of this test left two).
    for (const dir of mounted) await sh('umount', ['-l', dir], { allowFail: true });
    if (root !== null) await rm(root, { recursive: true, force: true });
  }
});

async function tmpfs(dir: string, size: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await sh('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'strata-test-disk-full', dir]);
  mounted.push(dir);
}

/** Every block taken (tmpfs counts pages: the last ones one at a time). */
async function fill(dir: string): Promise<void> {
  await sh('dd', ['if=/dev/zero', `of=${join(dir, 'filler')}`, 'bs=1M'], { allowFail: true, timeoutMs: 30_000 });
  await sh('dd', ['if=/dev/zero', `of=${join(dir, 'filler-small')}`, 'bs=4k'], { allowFail: true, timeoutMs: 30_000 });
  const fs = await statfs(dir);
  expect(fs.bavail * fs.bsize).toBeLessThan(8 * 1024);
}

describe.skipIf(!asRoot)('a full disk under the home', () => {
  it('is 507 DISK_FULL on the control API, with words that say what to do, and the write succeeds once there is room', async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-disk-full-'));
    const home = join(root, 'home');
    await tmpfs(home, '64m');
    const dir = join(root, 'project');
    await mkdir(dir);
    daemon = await startDaemon({ home, listen: '127.0.0.1:0', logger: pino({ level: process.env['STRATA_TEST_LOG'] ?? 'silent' }) });
    const { project } = await daemon.addProject({ dir, mode: 'watch' });
    const write = (body: Buffer) =>
      fetch(`${daemon!.url}/v1/projects/${project.projectId}/fs/write?path=data.bin`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${daemon!.owner.apiKey}`, 'content-type': 'application/octet-stream' },
        body,
      });
    await fill(home);
    const content = randomBytes(256 * 1024);
    const refused = await write(content);
    expect(refused.status).toBe(507);
    const { error } = (await refused.json()) as { error: { code: string; message: string; details?: { code?: string } } };
    expect(error.code).toBe('DISK_FULL');
    expect(error.message).toMatch(/no space left/i);
    expect(error.message).toMatch(/free some space/);
    expect(error.details?.code).toMatch(/^(ENOSPC|SQLITE_FULL)$/);
    // Nothing recorded.
    const history = await fetch(`${daemon.url}/v1/projects/${project.projectId}/history?path=data.bin`, { headers: { authorization: `Bearer ${daemon.owner.apiKey}` } });
    expect(((await history.json()) as { items: unknown[] }).items).toEqual([]);

    await rm(join(home, 'filler'));
    const accepted = await write(content);
    expect(accepted.status).toBe(201);
  }, 120_000);

  it('is DISK_FULL naming the file for a settings file written whole (daemon.json, credentials), not INTERNAL', async () => {
    root ??= await mkdtemp(join(tmpdir(), 'strata-disk-full-'));
    const small = join(root, 'small');
    await tmpfs(small, '1m');
    await fill(small);
    const file = join(small, 'daemon.json');
    const failure = await writeFileAtomic(file, JSON.stringify({ projects: Array.from({ length: 200 }, (_, i) => ({ dir: `/p/${i}` })) }), 0o644).then(
      () => null,
      (error: unknown) => error,
    );
    expect(isStrataError(failure, 'DISK_FULL')).toBe(true);
    expect((failure as Error).message).toContain(file);
  });
});
