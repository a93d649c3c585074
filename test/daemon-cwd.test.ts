// A daemon must not depend on the directory it was started from. Started from a shell whose working
// directory then disappears (removed, or an unmounted mount), every worker thread it started later
// failed (uv_cwd: ENOENT / ENOTCONN), so no file's content could be stored: captures ended in
// STORAGE_ERROR while the daemon looked healthy. The daemon leaves it for `/` at start.

import { once } from 'node:events';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { baseEnv, MAIN, startListening } from './cli-harness.js';
import { sh, waitFor } from './daemon-harness.js';

describe('the daemon and the directory it was started from', () => {
  let root: string;
  let daemon: Awaited<ReturnType<typeof startListening>> | undefined;
  afterAll(async () => {
    if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  });

  it('stores content after its starting directory is removed', async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-daemon-cwd-'));
    const env = { ...baseEnv(join(root, 'config')), STRATA_HOME: join(root, 'home') };
    const started = join(root, 'started-here');
    await mkdir(started);
    daemon = await startListening(['daemon', '--listen', '127.0.0.1:0'], env, 20_000, started);
    await rm(started, { recursive: true });
    const dir = join(root, 'project');
    const strata = (args: string[], cwd = root, allowFail = false) => sh(process.execPath, [MAIN, ...args], { cwd, env, allowFail, timeoutMs: 20_000 });
    await strata(['init', 'project']);
    await writeFile(join(dir, 'a.txt'), 'kept\n');
    await waitFor(
      'a.txt versioned',
      async () => {
        const r = await strata(['history', 'a.txt', '--json'], dir, true);
        return r.code === 0 && JSON.parse(r.stdout).items.length === 1 ? true : undefined;
      },
      30_000,
    );
    expect((await strata(['cat', 'a.txt'], dir)).stdout).toBe('kept\n');
    const status = JSON.parse((await strata(['status', '--json'])).stdout) as { projects: Array<{ errors: unknown[] }> };
    expect(status.projects[0]!.errors).toEqual([]);
    daemon.child.kill('SIGTERM');
    const [code] = (await once(daemon.child, 'exit')) as [number | null];
    expect(code).toBe(0);
  }, 90_000);
});
