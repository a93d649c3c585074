// `strata init` on a directory the user cannot write (a colleague's, on a shared workstation) created
// the project, then failed to write .strata/project.json: "Internal error (INTERNAL)", exit 1, and one
// more project without a directory in the home at each try. It is refused as FORBIDDEN (exit 5)
// before anything is created. Needs root (runs the CLI as another user with setpriv).

import { chmod, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAIN } from './cli-harness.js';
import { sh } from './daemon-harness.js';

const asRoot = process.getuid?.() === 0;
let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'strata-init-unwritable-'));
  await chmod(root, 0o755);
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe.skipIf(!asRoot)('strata init on a directory of another user', () => {
  it('is refused as FORBIDDEN and creates no project', async () => {
    const theirs = join(root, 'theirs');
    await mkdir(theirs, { mode: 0o755 });
    const mine = join(root, 'mine');
    await mkdir(mine);
    await chmod(mine, 0o777);
    const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: mine, XDG_CONFIG_HOME: join(mine, 'config'), STRATA_HOME: join(mine, 'home') };
    const asNobody = (args: string[]) =>
      sh('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, MAIN, ...args, '--json'], { cwd: mine, env, allowFail: true, timeoutMs: 30_000 });

    for (let attempt = 0; attempt < 2; attempt++) {
      const result = await asNobody(['init', theirs]);
      expect(result.code).toBe(5);
      const error = (JSON.parse(result.stdout) as { error: { code: string; message: string } }).error;
      expect(error.code).toBe('FORBIDDEN');
      expect(error.message).toContain(`${theirs} is not writable for this user`);
    }
    const config = JSON.parse(await readFile(join(mine, 'home', 'daemon.json'), 'utf8').catch(() => '{"projects":[]}')) as { projects: unknown[] };
    expect(config.projects).toEqual([]);
    const status = JSON.parse((await asNobody(['status'])).stdout) as { projects: unknown[] };
    expect(status.projects).toEqual([]);
  }, 90_000);
});
