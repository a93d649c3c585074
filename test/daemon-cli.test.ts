// The daemon through the compiled CLI, as users run it: `strata init`, `strata daemon`, project
// discovery inside the directory (no --project, no server URL, no key), `strata status`,
// `strata watch` adding to a running daemon, and SIGTERM → exit 0.

import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, MAIN, startListening } from './cli-harness.js';
import { sh, waitFor } from './daemon-harness.js';

type Daemon = Awaited<ReturnType<typeof startListening>>;

describe('strata init / daemon / status / watch and project discovery', () => {
  let root: string;
  let env: NodeJS.ProcessEnv;
  let daemon: Daemon | undefined;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-daemon-cli-'));
    env = { ...baseEnv(join(root, 'config')), STRATA_HOME: join(root, 'home') };
  });
  afterAll(async () => {
    if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  });
  const strata = (args: string[], cwd = root, allowFail = false) => sh(process.execPath, [MAIN, ...args], { cwd, env, allowFail, timeoutMs: 20_000 });
  const json = async <T>(args: string[], cwd = root): Promise<T> => JSON.parse((await strata([...args, '--json'], cwd)).stdout) as T;

  it('init without a daemon binds the directory and writes .strata/project.json (and a .gitignore for it)', async () => {
    const result = await json<{ projectId: string; dir: string; mode: string; created: boolean; daemonRunning: boolean }>(['init', 'thesis']);
    expect(result).toMatchObject({ dir: join(root, 'thesis'), mode: 'watch', created: true, daemonRunning: false });
    const file = JSON.parse(await readFile(join(root, 'thesis', '.strata', 'project.json'), 'utf8')) as { projectId: string; home: string };
    expect(file).toEqual({ projectId: result.projectId, home: join(root, 'home') });
    expect(await readFile(join(root, 'thesis', '.strata', '.gitignore'), 'utf8')).toBe('*\n');
    const again = await json<{ projectId: string; created: boolean }>(['init', 'thesis']);
    expect(again).toMatchObject({ projectId: result.projectId, created: false });
    const status = await json<{ running: boolean; projects: Array<{ state: string }> }>(['status']);
    expect(status).toMatchObject({ running: false, projects: [{ state: 'stopped' }] });
  });

  it('refuses a directory inside another project (PROJECT_DIR_TAKEN, exit 4)', async () => {
    const nested = await strata(['init', join(root, 'thesis', 'sub'), '--json'], root, true);
    expect(nested.code).toBe(4);
    expect(JSON.parse(nested.stdout).error.code).toBe('PROJECT_DIR_TAKEN');
    // the same directory in the other mode: refused, with what to do instead
    const other = await strata(['init', 'thesis', '--mode', 'mount', '--json'], root, true);
    expect(other.code).toBe(4);
    const error = JSON.parse(other.stdout).error as { code: string; message: string };
    expect(error.code).toBe('PROJECT_DIR_TAKEN');
    expect(error.message).toMatch(/watch mode\).*strata mount --import/);
  });

  it('the daemon captures; inside the directory `strata history` finds project and daemon by itself', async () => {
    daemon = await startListening(['daemon', '--listen', '127.0.0.1:0'], env);
    const dir = join(root, 'thesis');
    await mkdir(join(dir, 'sub'), { recursive: true });
    await writeFile(join(dir, 'a.m'), 'x = 1;\n');
    await waitFor('a.m versioned', async () => {
      const r = await strata(['history', 'a.m', '--json'], dir, true);
      return r.code === 0 && JSON.parse(r.stdout).items.length === 1 ? true : undefined;
    });
    // from a subdirectory too, and `cat` reads the version back; paths there are relative to it, as in git
    const cat = await strata(['cat', '../a.m'], join(dir, 'sub'));
    expect(cat.stdout).toBe('x = 1;\n');
    await writeFile(join(dir, 'sub', 'a.m'), 'x = 2;\n');
    await waitFor('sub/a.m versioned', async () => {
      const r = await strata(['history', 'a.m', '--json'], join(dir, 'sub'), true);
      return r.code === 0 && JSON.parse(r.stdout).items.length === 1 ? true : undefined;
    });
    expect((await strata(['cat', 'a.m'], join(dir, 'sub'))).stdout).toBe('x = 2;\n');
    expect((await strata(['cat', 'sub/a.m'], dir)).stdout).toBe('x = 2;\n');
    const listing = await json<{ path: string; items: Array<{ name: string }> }>(['ls'], join(dir, 'sub'));
    expect(listing).toMatchObject({ path: 'sub', items: [{ name: 'a.m' }] });
    const status = await json<{ running: boolean; projects: Array<{ state: string; lastVersion: { path: string } | null; backend: string }> }>(['status'], dir);
    expect(status.running).toBe(true);
    expect(status.projects[0]).toMatchObject({ state: 'watching', backend: 'inotify', lastVersion: { path: 'sub/a.m' } });
    const human = await strata(['status'], dir);
    expect(human.stdout).toMatch(/^daemon: pid \d+/);
    expect(human.stdout).toMatch(/thesis\s+watch\s+watching/);
  });

  it('inside the directory, the directory wins over exported STRATA_PROJECT_ID / STRATA_API_KEY / STRATA_SERVER_URL (issue 13 item 6)', async () => {
    const dir = join(root, 'thesis');
    // what the README ("Files, keys and the API without a daemon") has users export for a team server
    const exported = {
      ...env,
      STRATA_PROJECT_ID: '00000000-0000-4000-8000-000000000000',
      STRATA_API_KEY: 'rk.test.0123456789abcdef.team-key-that-must-not-reach-the-daemon',
      STRATA_SERVER_URL: 'http://127.0.0.1:9',
    };
    const inDir = await sh(process.execPath, [MAIN, 'history', 'a.m', '--json'], { cwd: dir, env: exported, allowFail: true, timeoutMs: 20_000 });
    expect(inDir.code, inDir.stderr).toBe(0);
    expect(JSON.parse(inDir.stdout).items).toHaveLength(1);
    expect(inDir.stderr).toMatch(/STRATA_PROJECT_ID, STRATA_SERVER_URL, STRATA_API_KEY are not used here/);
    expect(inDir.stderr).not.toContain('team-key');
    // outside any project directory the variables apply as before (and that server is not there)
    const outside = await sh(process.execPath, [MAIN, 'history', 'a.m', '--json'], { cwd: root, env: exported, allowFail: true, timeoutMs: 20_000 });
    expect(outside.code).not.toBe(0);
    expect(JSON.parse(outside.stdout).error.code).toBe('SERVER_UNREACHABLE');
    // an explicit flag still chooses: --project names another project, through the exported server
    const flagged = await sh(process.execPath, [MAIN, 'history', 'a.m', '--project', exported.STRATA_PROJECT_ID, '--json'], { cwd: dir, env: exported, allowFail: true, timeoutMs: 20_000 });
    expect(flagged.code).not.toBe(0);
  });

  it('init and watch go through the running daemon, which captures at once', async () => {
    const result = await json<{ projectId: string; daemonRunning: boolean }>(['init', 'second']);
    expect(result.daemonRunning).toBe(true);
    await writeFile(join(root, 'second', 'b.txt'), 'b\n');
    const watched = await json<{ projectId: string; daemonRunning: boolean }>(['watch', 'third']);
    expect(watched.daemonRunning).toBe(true);
    await writeFile(join(root, 'third', 'c.txt'), 'c\n');
    for (const [dir, path] of [
      ['second', 'b.txt'],
      ['third', 'c.txt'],
    ] as const) {
      await waitFor(`${dir}/${path} versioned`, async () => {
        const r = await strata(['history', path, '--json'], join(root, dir), true);
        return r.code === 0 && JSON.parse(r.stdout).items.length === 1 ? true : undefined;
      });
    }
    const status = await json<{ projects: unknown[] }>(['status']);
    expect(status.projects).toHaveLength(3);
  });

  it('a second daemon for the same home is refused; SIGTERM stops the daemon with exit 0', async () => {
    const second = await strata(['daemon', '--listen', '127.0.0.1:0', '--json'], root, true);
    expect(second.code).toBe(4);
    expect(JSON.parse(second.stdout).error.code).toBe('DAEMON_RUNNING');
    // a write just before the stop is still captured
    await writeFile(join(root, 'thesis', 'last.m'), 'last\n');
    await new Promise((resolve) => setTimeout(resolve, 20));
    daemon!.child.kill('SIGTERM');
    const [code] = (await once(daemon!.child, 'exit')) as [number | null];
    expect(code).toBe(0);
    expect(daemon!.stderr()).toMatch(/SIGTERM, stopping/);
    const status = await json<{ running: boolean }>(['status']);
    expect(status.running).toBe(false);
    // without the daemon the CLI says where it tried (exit 7)
    const down = await strata(['history', 'last.m'], join(root, 'thesis'), true);
    expect(down.code).toBe(7);
    daemon = await startListening(['daemon'], env);
    const history = await json<{ items: unknown[] }>(['history', 'last.m'], join(root, 'thesis'));
    expect(history.items).toHaveLength(1);
    daemon.child.kill('SIGTERM');
    expect((await once(daemon.child, 'exit'))[0]).toBe(0);
  });
});
