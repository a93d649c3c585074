// `--project ID` outside the project's directory, with no server configured: the command goes to the
// daemon of this machine's home that has the project, as it does inside the directory. It answered
// NO_CREDENTIALS ("run `strata login`") before, sending the user after a team server they do not have.
// An id the home does not have says so (PROJECT_NOT_FOUND), a configured server still wins, and a
// daemon that is down says how to start it. A real daemon, the compiled CLI.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, closedPort, MAIN, startListening } from './cli-harness.js';
import { sh, waitFor } from './daemon-harness.js';

let root: string;
let env: NodeJS.ProcessEnv;
let projectId: string;
let daemon: Awaited<ReturnType<typeof startListening>> | null = null;

const strata = (args: string[], cwd: string, extra: NodeJS.ProcessEnv = {}) =>
  sh(process.execPath, [MAIN, ...args, '--json'], { cwd, env: { ...env, ...extra }, allowFail: true, timeoutMs: 20_000 });
const errorOf = (result: { stdout: string }) => (JSON.parse(result.stdout) as { error: { code: string; message: string } }).error;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'strata-project-by-id-'));
  env = { ...baseEnv(join(root, 'config')), STRATA_HOME: join(root, 'home') };
  await mkdir(join(root, 'proj'));
  await mkdir(join(root, 'elsewhere'));
  await writeFile(join(root, 'proj', 'a.m'), 'a\n');
  const init = await strata(['init', join(root, 'proj')], root);
  expect(init.code).toBe(0);
  projectId = (JSON.parse(init.stdout) as { projectId: string }).projectId;
});

afterAll(async () => {
  if (daemon !== null && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
  await rm(root, { recursive: true, force: true });
});

describe('--project ID of a project of this machine, from another directory', () => {
  it('the daemon down: DAEMON_NOT_RUNNING, with how to start it', async () => {
    const result = await strata(['history', '--project', projectId], join(root, 'elsewhere'));
    expect(result.code).toBe(7);
    expect(errorOf(result)).toMatchObject({ code: 'DAEMON_NOT_RUNNING', message: expect.stringContaining('strata daemon') });
  });

  it('the daemon running: history and retention answer as inside the directory', async () => {
    daemon = await startListening(['daemon', '--listen', '127.0.0.1:0'], env);
    const elsewhere = join(root, 'elsewhere');
    const history = await waitFor('a.m versioned', async () => {
      const result = await strata(['history', 'a.m', '--project', projectId], elsewhere);
      return result.code === 0 && (JSON.parse(result.stdout) as { items: unknown[] }).items.length === 1 ? JSON.parse(result.stdout) : undefined;
    });
    expect(history.items[0]).toMatchObject({ path: 'a.m', projectId });
    expect((await strata(['retention', 'get', '--project', projectId], elsewhere)).code).toBe(0);
    expect((await strata(['history'], elsewhere, { STRATA_PROJECT_ID: projectId })).code).toBe(0);
    // Inside the directory, naming its project explicitly works too.
    expect((await strata(['history', '--project', projectId], join(root, 'proj'))).code).toBe(0);
  }, 60_000);

  it('an id this home does not have: PROJECT_NOT_FOUND naming the home, not a login', async () => {
    const other = '01890000-0000-7000-8000-000000000000';
    const result = await strata(['history', '--project', other], join(root, 'elsewhere'));
    expect(result.code).toBe(3);
    const error = errorOf(result);
    expect(error.code).toBe('PROJECT_NOT_FOUND');
    expect(error.message).toContain(join(root, 'home'));
    expect(error.message).toContain("inside the project's directory");
  });

  it('a configured server still wins: the daemon is not asked, and its key not sent', async () => {
    const server = `http://127.0.0.1:${await closedPort()}`;
    const result = await strata(['history', '--project', projectId], join(root, 'elsewhere'), { STRATA_SERVER_URL: server });
    expect(result.code).toBe(5);
    expect(errorOf(result).code).toBe('NO_CREDENTIALS');
    expect(daemon!.stderr()).not.toMatch(/\/v1\/projects/);
  });
});
