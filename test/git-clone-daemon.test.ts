// `strata git clone` made inside a daemon-watched project, then `strata git pull` in the clone: the
// clone is not a project directory, so before it recorded its daemon's home it had no credentials
// (NO_CREDENTIALS, found while writing the README). Real daemon through the CLI, real git.
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, MAIN, startListening } from './cli-harness.js';
import { sh, waitFor } from './daemon-harness.js';

describe('strata git clone of a daemon project', () => {
  let root: string;
  let project: string;
  let env: NodeJS.ProcessEnv;
  let daemon: Awaited<ReturnType<typeof startListening>> | undefined;
  const strata = (args: string[], cwd: string, allowFail = false) => sh(process.execPath, [MAIN, ...args], { cwd, env, allowFail, timeoutMs: 30_000 });

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-git-daemon-'));
    project = join(root, 'thesis');
    env = { ...baseEnv(join(root, 'config')), STRATA_HOME: join(root, 'home') };
    await mkdir(project);
    await strata(['init', project], root);
    daemon = await startListening(['daemon', '--listen', '127.0.0.1:0'], env);
  }, 60_000);

  afterAll(async () => {
    if (daemon !== undefined && daemon.child.exitCode === null) {
      daemon.child.kill('SIGTERM');
      await waitFor('the daemon to stop', () => (daemon!.child.exitCode !== null || daemon!.child.signalCode !== null ? true : undefined), 20_000).catch(() => daemon!.child.kill('SIGKILL'));
    }
    await rm(root, { recursive: true, force: true });
  });

  const versioned = (path: string, count: number) =>
    waitFor(`${path} versioned`, async () => {
      const result = await strata(['history', path, '--json'], project, true);
      return result.code === 0 && JSON.parse(result.stdout).items.length === count ? true : undefined;
    }, 20_000);

  it('pulls through the daemon it was cloned from, with no key configured', async () => {
    await writeFile(join(project, 'fit.m'), 'y = 1;\n');
    await versioned('fit.m', 1);
    await strata(['snapshot', 'create', '-m', 'first'], project);
    const projectId = JSON.parse((await strata(['status', '--json'], project)).stdout).projects[0].projectId as string;
    const clone = join(root, 'clone');
    await strata(['git', 'clone', projectId, clone], project);
    expect((await sh('git', ['config', '--get', 'strata.home'], { cwd: clone, env, timeoutMs: 10_000 })).stdout.trim()).toBe(join(root, 'home'));

    await writeFile(join(project, 'fit.m'), 'y = 2;\n');
    await versioned('fit.m', 2);
    await strata(['snapshot', 'create', '-m', 'second'], project);
    const pull = await strata(['git', 'pull', '--json'], clone, true);
    expect(pull.code, pull.stderr).toBe(0);
    expect(await readFile(join(clone, 'fit.m'), 'utf8')).toBe('y = 2;\n');
    const log = await sh('git', ['log', '--format=%s', 'main'], { cwd: clone, env, timeoutMs: 10_000 });
    expect(log.stdout.trim().split('\n')).toHaveLength(2);
  });

  it('in the project directory, `strata git clone DIR` clones that project, as the README says; a DIR inside the project is refused', async () => {
    const projectId = JSON.parse((await strata(['status', '--json'], project)).stdout).projects[0].projectId as string;
    const result = await strata(['git', 'clone', '../by-dir', '--json'], project, true);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ projectId, commits: 2 });
    const clone = join(root, 'by-dir');
    expect(await readFile(join(clone, 'fit.m'), 'utf8')).toBe('y = 2;\n');
    expect((await sh('git', ['config', '--get', 'strata.home'], { cwd: clone, env, timeoutMs: 10_000 })).stdout.trim()).toBe(join(root, 'home'));
    // the daemon would version the clone's files into the project itself
    const inside = await strata(['git', 'clone', 'repo', '--json'], project, true);
    expect(inside.code).toBe(4);
    expect(JSON.parse(inside.stdout || inside.stderr).error.code).toBe('TARGET_IN_PROJECT');
    expect(await stat(join(project, 'repo')).then(() => true, () => false)).toBe(false);
  });
});
