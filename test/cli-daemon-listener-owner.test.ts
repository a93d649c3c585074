// The owner key goes only to this home's daemon. From the moment a starting daemon takes the home's
// lock until it records the address it bound, daemon.json still names the address of its last run,
// where another user of the machine may listen meanwhile: the CLI sent the owner key there (seen with
// a listener of another user's on a shared workstation, the daemon restarting). A listener that is not
// the lock holder's user's is not the daemon. Needs root (a listener run as another user with setpriv).

import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonTarget } from '../cli/discover.js';
import { waitFor } from './daemon-harness.js';

const asRoot = process.getuid?.() === 0;
let root: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'strata-listener-owner-'));
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await rm(root, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  const server: Server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  server.close();
  await once(server, 'close');
  return port;
}

/** A home whose lock a live process of ours holds (a daemon starting) and whose daemon.json names `port`. */
async function startingHome(name: string, port: number): Promise<string> {
  const home = join(root, name);
  await mkdir(join(home, 'daemon'), { recursive: true });
  await mkdir(join(home, 'secrets'), { recursive: true });
  await writeFile(join(home, 'secrets', 'local-owner.key'), 'rk.local.test.secret\n', { mode: 0o600 });
  await writeFile(join(home, 'daemon.json'), `${JSON.stringify({ listen: `127.0.0.1:${port}`, projects: [] })}\n`);
  const holder = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  children.push(holder);
  await writeFile(join(home, 'daemon', 'daemon.lock'), `${holder.pid}\n`, { mode: 0o600 });
  return home;
}

describe.skipIf(!asRoot)('the daemon the CLI sends the owner key to', () => {
  it('is not another user’s listener at the recorded address', async () => {
    const port = await freePort();
    const home = await startingHome('home-a', port);
    const listener = spawn('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '-e', `require('net').createServer(() => {}).listen(${port}, '127.0.0.1')`], { stdio: 'ignore' });
    children.push(listener);
    await waitFor('the other user listens', async () => {
      const probe = createServer();
      const taken = await new Promise<boolean>((resolve) => {
        probe.once('error', () => resolve(true));
        probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(false)));
      });
      return taken ? true : undefined;
    });
    expect(daemonTarget(home)).toMatchObject({ serverUrl: `http://127.0.0.1:${port}`, running: false });
  });

  it('is a listener of the lock holder’s user', async () => {
    const server = createServer(() => {});
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const home = await startingHome('home-b', (server.address() as { port: number }).port);
      expect(daemonTarget(home)).toMatchObject({ running: true });
    } finally {
      server.close();
    }
  });
});
