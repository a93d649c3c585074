// `git pull` under a running daemon: the next bin/strata run rebuilds dist/, and a mount project the
// daemon starts after that (strata mount of a new directory) imports the new mount code into a process
// holding the old modules. It failed to link and was reported as FUSE_UNAVAILABLE, "use strata watch
// DIR instead": neither true nor the way out. It says the daemon needs a restart.

import { spawn } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, REPO, runCli } from './cli-harness.js';
import { waitFor } from './daemon-harness.js';
import { waitExit } from './mount-harness.js';

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'strata-rebuilt-'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('a daemon whose Strata was rebuilt under it', () => {
  it('says to restart it when a new mount project cannot load the new code', async () => {
    // An install of its own (the built dist/ copied, the rest shared), so it can be "upgraded" here.
    const install = join(root, 'install');
    await mkdir(install);
    await cp(join(REPO, 'dist'), join(install, 'dist'), { recursive: true });
    await cp(join(REPO, 'package.json'), join(install, 'package.json'));
    for (const name of ['node_modules', 'native']) await symlink(join(REPO, name), join(install, name));
    const main = join(install, 'dist', 'cli', 'main.js');
    const home = join(root, 'home');
    const env = { ...baseEnv(join(root, 'config')), STRATA_HOME: home, STRATA_LOG_LEVEL: 'warn' };
    await runCli(['init', join(root, 'watched'), '--mode', 'watch', '--home', home], env, { timeoutMs: 20_000 });

    const daemon = spawn(process.execPath, [main, 'daemon', '--home', home, '--listen', '127.0.0.1:0'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    daemon.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    try {
      await waitFor('the daemon listening', () => (stderr.includes('listening on') ? true : undefined), 20_000);
      // The upgrade: mount code that needs an export the running process's modules lack, a new stamp.
      const index = join(install, 'dist', 'daemon', 'mount', 'index.js');
      await writeFile(index, `import { ADDED_BY_THE_UPGRADE } from '../../engine/errors.js';\nvoid ADDED_BY_THE_UPGRADE;\n${await readFile(index, 'utf8')}`);
      const now = new Date();
      await writeFile(join(install, 'dist', '.build-stamp'), '');
      await utimes(join(install, 'dist', '.build-stamp'), now, now);

      const result = await runCli(['mount', join(root, 'mnt'), '--home', home], env, { timeoutMs: 30_000 });
      expect(result.code).not.toBe(0);
      expect(result.stderr).not.toContain('FUSE_UNAVAILABLE');
      expect(result.stderr).toMatch(/rebuilt .* after this daemon started.*restart the daemon/);
    } finally {
      daemon.kill('SIGTERM');
      await waitExit(daemon, 15_000);
    }
  }, 90_000);
});
