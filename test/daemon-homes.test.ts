// Two homes on one machine (two users of a shared workstation): every home starts with the same daemon
// address, so the second daemon finds it taken. It must still start (on a free port, recorded in its
// daemon.json), the CLI must never take the other home's daemon for its own (nor send it its owner
// key), and a project whose daemon is down says so.

import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, closedPort, MAIN, startListening } from './cli-harness.js';
import { sh, waitFor } from './daemon-harness.js';

type Daemon = Awaited<ReturnType<typeof startListening>>;

describe('daemons of two homes that want the same address', () => {
  let root: string;
  let port: number;
  const envs: NodeJS.ProcessEnv[] = [];
  const daemons: Daemon[] = [];
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-homes-'));
    port = await closedPort();
    for (const name of ['ada', 'bob', 'cy']) envs.push({ ...baseEnv(join(root, `${name}-config`)), STRATA_HOME: join(root, `${name}-home`) });
  });
  afterAll(async () => {
    for (const daemon of daemons) if (daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  });
  const strata = (env: NodeJS.ProcessEnv, args: string[], cwd = root) => sh(process.execPath, [MAIN, ...args], { cwd, env, allowFail: true, timeoutMs: 20_000 });
  const daemonJson = async (env: NodeJS.ProcessEnv) => JSON.parse(await readFile(join(env['STRATA_HOME']!, 'daemon.json'), 'utf8')) as { listen: string };

  it('the second daemon starts on a free port and records it; each CLI talks to its own daemon', async () => {
    const [ada, bob] = [envs[0]!, envs[1]!];
    for (const [env, dir] of [
      [ada, 'ada-project'],
      [bob, 'bob-project'],
    ] as const) {
      expect((await strata(env, ['init', dir])).code).toBe(0);
      // both at the same address, as two fresh homes are (with a port of this test's own)
      const file = join(env['STRATA_HOME']!, 'daemon.json');
      await writeFile(file, JSON.stringify({ ...(await daemonJson(env)), listen: `127.0.0.1:${port}` }));
    }
    daemons.push(await startListening(['daemon'], ada));
    expect(daemons[0]!.url).toBe(`http://127.0.0.1:${port}`);

    // Bob's daemon is down. Ada's answers at Bob's address, but it is not Bob's: no key goes there.
    const bobDir = join(root, 'bob-project');
    await writeFile(join(bobDir, 'notes.txt'), 'bob\n');
    const down = await strata(bob, ['history', 'notes.txt', '--json'], bobDir);
    expect(down.code).toBe(7);
    expect(JSON.parse(down.stdout).error.code).toBe('DAEMON_NOT_RUNNING');
    expect(down.stderr).toContain('strata daemon');
    expect(daemons[0]!.stderr()).not.toMatch(/notes\.txt|\/v1\/projects/);
    const status = JSON.parse((await strata(bob, ['status', '--json'])).stdout) as { running: boolean };
    expect(status.running).toBe(false);

    // Bob's daemon starts anyway, on another port, and says so.
    daemons.push(await startListening(['daemon'], bob));
    const bobUrl = daemons[1]!.url;
    expect(bobUrl).not.toBe(`http://127.0.0.1:${port}`);
    expect(daemons[1]!.stderr()).toMatch(/is in use .*free port/);
    expect(`http://${(await daemonJson(bob)).listen}`).toBe(bobUrl);

    const history = await waitFor('notes.txt versioned by Bob\'s daemon', async () => {
      const r = await strata(bob, ['history', 'notes.txt', '--json'], bobDir);
      return r.code === 0 && JSON.parse(r.stdout).items.length === 1 ? JSON.parse(r.stdout) : undefined;
    });
    expect(history.items[0]).toMatchObject({ path: 'notes.txt' });
    const bobStatus = JSON.parse((await strata(bob, ['status', '--json'])).stdout) as { running: boolean; daemon: { url: string; home: string } };
    expect(bobStatus).toMatchObject({ running: true, daemon: { url: bobUrl, home: bob['STRATA_HOME'] } });
    const adaStatus = JSON.parse((await strata(ada, ['status', '--json'])).stdout) as { daemon: { home: string } };
    expect(adaStatus.daemon.home).toBe(ada['STRATA_HOME']);
  }, 180_000);

  it('an address given with --listen that is taken fails with a clear message instead', async () => {
    const cy = envs[2]!;
    expect((await strata(cy, ['init', 'cy-project'])).code).toBe(0);
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as { port: number }).port;
    try {
      const result = await strata(cy, ['daemon', '--listen', `127.0.0.1:${taken}`, '--json']);
      expect(result.code).toBe(4);
      const error = JSON.parse(result.stdout).error as { code: string; message: string };
      expect(error.code).toBe('DAEMON_RUNNING');
      expect(error.message).toMatch(/is in use.*--listen/);
    } finally {
      blocker.close();
    }
  });

  it('SIGTERM stops both daemons cleanly', async () => {
    for (const daemon of daemons) {
      daemon.child.kill('SIGTERM');
      expect((await once(daemon.child, 'exit'))[0]).toBe(0);
    }
  });
});
