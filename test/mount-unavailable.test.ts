// Where FUSE cannot work (no /dev/fuse, or the binding / libfuse3 does not load), `strata mount DIR`
// fails with FUSE_UNAVAILABLE and points to watch mode, binding nothing. STRATA_FUSE_DEVICE simulates
// a machine without the device.

import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadFuse } from '../daemon/mount/fuse-binding.js';
import { isStrataError } from '../engine/errors.js';
import { baseEnv, runCli } from './cli-harness.js';

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'strata-nofuse-'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('FUSE unavailable', () => {
  it('strata mount fails with FUSE_UNAVAILABLE and a pointer to strata watch', async () => {
    const env = { ...baseEnv(join(root, 'config')), STRATA_FUSE_DEVICE: join(root, 'no-such-device') };
    const dir = join(root, 'mnt');
    const result = await runCli(['mount', dir, '--home', join(root, 'home'), '--json'], env, { timeoutMs: 20_000 });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('(FUSE_UNAVAILABLE)');
    expect(result.stderr).toContain('strata watch DIR');
    expect(result.stderr).toContain('no-such-device');
    const body = JSON.parse(result.stdout) as { error: { code: string } };
    expect(body.error.code).toBe('FUSE_UNAVAILABLE');
    // Nothing was bound: no home was created for it.
    expect(await readdir(root)).not.toContain('home');
  });

  it('loadFuse throws the coded error in-process too', async () => {
    const previous = process.env['STRATA_FUSE_DEVICE'];
    process.env['STRATA_FUSE_DEVICE'] = join(root, 'missing');
    try {
      const error = await loadFuse().then(
        () => null,
        (e: unknown) => e,
      );
      expect(isStrataError(error, 'FUSE_UNAVAILABLE')).toBe(true);
      expect((error as Error).message).toMatch(/use `strata watch DIR`/);
    } finally {
      if (previous === undefined) delete process.env['STRATA_FUSE_DEVICE'];
      else process.env['STRATA_FUSE_DEVICE'] = previous;
    }
  });
});
