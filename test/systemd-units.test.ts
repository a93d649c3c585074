// The systemd units in systemd/ are valid units: `systemd-analyze verify` on each, with the paths a
// machine without Strata installed lacks (the binary, the service user, the env file) stood in for.

import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO } from './cli-harness.js';

const run = promisify(execFile);

describe('systemd units', () => {
  it('every unit verifies', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'strata-units-'));
    try {
      const units = (await readdir(join(REPO, 'systemd'))).filter((name) => name.endsWith('.service'));
      expect(units).toContain('strata-server.service');
      for (const unit of units) {
        const text = (await readFile(join(REPO, 'systemd', unit), 'utf8'))
          .replace(/^ExecStart=\S+/m, 'ExecStart=/bin/true')
          .replace(/^User=.*$/m, 'User=root')
          .replace(/^Group=.*$/m, 'Group=root')
          .replace(/^EnvironmentFile=(?!-)/m, 'EnvironmentFile=-');
        await writeFile(join(dir, unit), text);
        const result = await run('systemd-analyze', ['verify', join(dir, unit)]).catch((error: { stdout?: string; stderr?: string }) => error);
        expect(`${result.stderr ?? ''}`.trim(), unit).toBe('');
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
