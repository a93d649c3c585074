// `strata mount DIR` on a directory that holds files: refused before anything is bound (a mount would
// hide them), so `strata watch DIR` stays possible; and a bound mount point that gained a file while
// unmounted makes `strata mount` exit with the reason instead of serving nothing in the foreground.

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, MAIN } from './cli-harness.js';
import { sh } from './daemon-harness.js';

describe('strata mount refuses a directory that holds files', () => {
  let root: string;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-mount-refusals-'));
    env = { ...baseEnv(join(root, 'config')), STRATA_HOME: join(root, 'home') };
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });
  const strata = (args: string[]) => sh(process.execPath, [MAIN, ...args], { cwd: root, env, allowFail: true, timeoutMs: 30_000 });
  const boundDirs = async (): Promise<string[]> => {
    try {
      return (JSON.parse(await readFile(join(root, 'home', 'daemon.json'), 'utf8')) as { projects: Array<{ dir: string }> }).projects.map((p) => p.dir);
    } catch {
      return [];
    }
  };

  it('before binding it: exit 6, the reason, nothing bound, and watch mode still possible', async () => {
    const dir = join(root, 'results');
    await sh('mkdir', ['-p', dir]);
    await writeFile(join(dir, 'run1.csv'), 'a,b\n');
    const result = await strata(['mount', dir, '--json']);
    expect(result.code).toBe(6);
    const error = JSON.parse(result.stdout).error as { code: string; message: string };
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toMatch(/is not empty: mounting would hide its 1 entry.*strata watch/);
    expect(await boundDirs()).not.toContain(dir);
    const watch = await strata(['init', dir, '--json']);
    expect(watch.code).toBe(0);
    expect(JSON.parse(watch.stdout)).toMatchObject({ dir, mode: 'watch', created: true });
  });

  it('a bound mount point that gained a file: `strata mount` exits with the reason instead of idling', async () => {
    const dir = join(root, 'live');
    const init = await strata(['init', dir, '--mode', 'mount', '--json']);
    expect(init.code).toBe(0);
    await writeFile(join(dir, 'stray.txt'), 'written while not mounted\n');
    const started = Date.now();
    const result = await strata(['mount', dir, '--json']);
    expect(result.code).toBe(6);
    expect(Date.now() - started).toBeLessThan(20_000);
    const error = JSON.parse(result.stdout).error as { code: string; message: string };
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toMatch(/could not start: .*is not empty/);
    expect(await readFile(join(dir, 'stray.txt'), 'utf8')).toBe('written while not mounted\n');
  });
});
