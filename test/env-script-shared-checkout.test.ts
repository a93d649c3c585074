// One checkout for the users of a workstation (README "Install": bin/strata linked into each user's
// PATH). scripts/env.sh opened .tools/setup.lock for writing, which only its owner can: every command
// another user ran printed "setup.lock: Permission denied" twice on stderr. The lock is taken on a
// read-only descriptor then. Needs root (runs bin/strata as another user with setpriv) and a checkout
// other users can read.

import { accessSync, constants } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sh } from './daemon-harness.js';

const REPO = join(import.meta.dirname, '..');
const asRoot = process.getuid?.() === 0;

/** Whether user nobody can run this checkout's bin/strata (the checkout's directories readable by others). */
async function nobodyCanRun(): Promise<boolean> {
  if (!asRoot) return false;
  accessSync(join(REPO, 'bin', 'strata'), constants.X_OK);
  const probe = await sh('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'test', '-r', join(REPO, 'dist', 'cli', 'main.js')], { allowFail: true });
  return probe.code === 0;
}

let home: string;
beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'strata-env-shared-'));
  await sh('chmod', ['777', home]);
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

describe('scripts/env.sh in a checkout another user owns', () => {
  it('runs bin/strata without complaining about the setup lock', async (context) => {
    if (!(await nobodyCanRun())) context.skip();
    const result = await sh('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', join(REPO, 'bin', 'strata'), '--version'], {
      cwd: home,
      env: { PATH: '/usr/bin:/bin', HOME: home },
      allowFail: true,
      timeoutMs: 60_000,
    });
    expect(result.code).toBe(0);
    expect(result.stderr).not.toContain('setup.lock');
    expect(result.stderr).toBe('');
  }, 90_000);
});
