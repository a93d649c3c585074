// `strata status` lists every project of the home, with its name, whether or not the daemon runs
// (issue 18): the projects of daemon.json, and those the home's metadata has without a directory.

import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, MAIN, startListening } from './cli-harness.js';
import { sh, waitFor } from './daemon-harness.js';

interface StatusDoc {
  running: boolean;
  projects: Array<{ projectId: string; name: string | null; state: string; dir: string | null; mode: string }>;
}

describe('strata status with and without the daemon', () => {
  let root: string;
  let env: NodeJS.ProcessEnv;
  let daemon: Awaited<ReturnType<typeof startListening>> | undefined;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-status-'));
    env = { ...baseEnv(join(root, 'config')), STRATA_HOME: join(root, 'home') };
  });
  afterAll(async () => {
    if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  });
  const strata = (args: string[], cwd = root, allowFail = false) => sh(process.execPath, [MAIN, ...args], { cwd, env, allowFail, timeoutMs: 20_000 });
  const json = async <T>(args: string[], cwd = root): Promise<T> => JSON.parse((await strata([...args, '--json'], cwd)).stdout) as T;
  const byName = (doc: StatusDoc) => Object.fromEntries(doc.projects.map((p) => [p.name, p]));

  it('names every project of the home while no daemon runs', async () => {
    await strata(['init', 'thesis']);
    await strata(['init', 'paper']);
    const status = await json<StatusDoc>(['status']);
    expect(status.running).toBe(false);
    expect(byName(status)).toMatchObject({
      thesis: { state: 'stopped', mode: 'watch', dir: join(root, 'thesis') },
      paper: { state: 'stopped', mode: 'watch', dir: join(root, 'paper') },
    });
    expect(status.projects).toHaveLength(2);
    const human = await strata(['status']);
    expect(human.stdout).toMatch(/^daemon: not running/m);
    expect(human.stdout).toMatch(/^thesis\s+watch\s+stopped\s+.*thesis$/m);
    expect(human.stdout).toMatch(/^paper\s+watch\s+stopped\s+.*paper$/m);
  });

  it('with the daemon running, and after it stopped, a project without a directory included', async () => {
    daemon = await startListening(['daemon', '--listen', '127.0.0.1:0'], env);
    await waitFor('both projects watching', async () => {
      const status = await json<StatusDoc>(['status']);
      return status.running && status.projects.filter((p) => p.state === 'watching').length === 2 ? true : undefined;
    }, 20_000);
    // a project made through the daemon's API: in the home's metadata, in no directory
    const created = await strata(['project', 'create', 'archive', '--json'], join(root, 'thesis'));
    const archiveId = (JSON.parse(created.stdout) as { projectId: string }).projectId;
    const running = await json<StatusDoc>(['status']);
    expect(byName(running)).toMatchObject({
      thesis: { state: 'watching' },
      paper: { state: 'watching' },
      archive: { projectId: archiveId, state: 'no directory', dir: null, mode: '-' },
    });
    const human = await strata(['status']);
    expect(human.stdout).toMatch(/^archive\s+-\s+no directory\s+-$/m);

    daemon.child.kill('SIGTERM');
    await once(daemon.child, 'exit');
    const stopped = await json<StatusDoc>(['status']);
    expect(stopped.running).toBe(false);
    expect(byName(stopped)).toMatchObject({
      thesis: { state: 'stopped' },
      paper: { state: 'stopped' },
      archive: { state: 'no directory' },
    });
    expect(stopped.projects).toHaveLength(3);
  });
});
