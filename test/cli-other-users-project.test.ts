// A project directory shared between the users of a workstation (a group directory) belongs to the
// home of the user who bound it. Another user's commands there went on into that home: `strata status`,
// `watch` and `init` failed with "EACCES: permission denied, open '<their home>/daemon.json'
// (INTERNAL)", `strata history` asked to `strata login` (NO_CREDENTIALS). They are refused as
// FORBIDDEN (exit 5), naming the home. Needs root (runs the CLI as another user with setpriv).

import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAIN } from './cli-harness.js';
import { sh } from './daemon-harness.js';

const asRoot = process.getuid?.() === 0;
const NOBODY = 65534;
let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'strata-other-users-project-'));
  await chmod(root, 0o755);
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe.skipIf(!asRoot)('another user in a project directory', () => {
  it('is told the project is another home’s (FORBIDDEN, exit 5), for status, history, init and watch', async () => {
    // The owner's home (0700, as strata makes it) and the shared project directory that names it.
    const ownerHome = join(root, 'owner-home');
    await mkdir(ownerHome, { mode: 0o700 });
    const dir = join(root, 'lab');
    await mkdir(join(dir, '.strata'), { recursive: true });
    await writeFile(join(dir, '.strata', 'project.json'), `${JSON.stringify({ projectId: '01a21a45-1b71-735b-a43c-4c4848e718a0', home: ownerHome })}\n`);
    await writeFile(join(dir, 'run.py'), 'a = 1\n');
    await chmod(dir, 0o777);
    const otherHome = join(root, 'other');
    await mkdir(otherHome, { mode: 0o700 });
    await chmod(otherHome, 0o777);

    for (const command of [['status'], ['history'], ['init', '.'], ['watch', '.']]) {
      const result = await sh('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', process.execPath, MAIN, ...command, '--json'], {
        cwd: dir,
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: otherHome, XDG_CONFIG_HOME: join(otherHome, 'config'), XDG_DATA_HOME: join(otherHome, 'data') },
        allowFail: true,
        timeoutMs: 30_000,
      });
      expect({ command, code: result.code }).toEqual({ command, code: 5 });
      const error = (JSON.parse(result.stdout) as { error: { code: string; message: string } }).error;
      expect(error.code).toBe('FORBIDDEN');
      expect(error.message).toContain(`belongs to the Strata home ${ownerHome}`);
    }
  }, 120_000);
});
