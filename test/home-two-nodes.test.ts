// Two "nodes" on one home (issue 38 item 12): each daemon runs in its own PID namespace
// (`unshare --pid --fork --mount-proc`), where the other's pid does not exist, and its own UTS
// namespace with another host name — what a daemon on a second node of a cluster sees of the first
// over NFS. Before the home claim (server/home-claim.ts) the second daemon took the first one's
// daemon.lock for stale and both ran on one home. Real `strata daemon` processes; short leases
// (STRATA_HOME_LEASE_MS=3000: renewed every 0.5 s, lapsed 4.5 s after the last renewal, watched 0.75 s).

import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseRecord } from '../server/home-lease.js';
import { baseEnv, MAIN, tempDir } from './cli-harness.js';
import { sleep, waitFor } from './daemon-harness.js';

const LEASE_MS = 3_000;
const LAPSE_MS = LEASE_MS * 1.5;

interface NodeProcess {
  host: string;
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
}

/** `strata ARGS` as the only process of a new PID and UTS namespace whose host name is `host`. */
function onNode(host: string, args: string[], env: NodeJS.ProcessEnv): NodeProcess {
  const child = spawn('unshare', ['--pid', '--fork', '--mount-proc', '--uts', 'sh', '-c', `hostname ${host} && exec "$0" "$@"`, process.execPath, MAIN, ...args], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: a kill of the group takes unshare and the namespace's process together.
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { host, child, stdout: () => stdout, stderr: () => stderr, exited };
}

function signalGroup(node: NodeProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-node.child.pid!, signal);
  } catch {
    // gone already
  }
}

/** Resolves 'listening' once the daemon serves, or its exit code once it exited first. */
async function outcome(node: NodeProcess, timeoutMs = 60_000): Promise<'listening' | number | null> {
  let exited: number | null | undefined;
  void node.exited.then((code) => {
    exited = code;
  });
  return waitFor(`the daemon on ${node.host} to listen or exit`, () => (/listening on http/.test(node.stderr()) ? ('listening' as const) : exited === undefined ? undefined : exited), timeoutMs);
}

interface ErrorDoc {
  code: string;
  message: string;
  details: { host?: string; pid?: number; since?: string; reason?: string };
}

function errorOf(node: NodeProcess): ErrorDoc {
  try {
    return (JSON.parse(node.stdout()) as { error: ErrorDoc }).error;
  } catch {
    throw new Error(`no error document on stdout (${node.stdout()}); stderr:\n${node.stderr()}`);
  }
}

describe('two nodes, one home', () => {
  it('never both run: the second is refused naming the first; a dead node\'s lease is taken over only after it lapsed; a clean stop frees the home at once', async () => {
    const dir = await tempDir('strata-two-nodes-');
    const home = join(dir.path, 'home');
    const env = { ...baseEnv(join(dir.path, 'config')), STRATA_HOME_LEASE_MS: String(LEASE_MS) };
    const daemon = (host: string, leaseMs = LEASE_MS) => onNode(host, ['daemon', '--home', home, '--listen', '127.0.0.1:0', '--json'], { ...env, STRATA_HOME_LEASE_MS: String(leaseMs) });
    const started: NodeProcess[] = [];
    const start = (host: string, leaseMs?: number) => {
      const node = daemon(host, leaseMs);
      started.push(node);
      return node;
    };
    const record = async () => parseRecord(await readFile(join(home, 'home.lock'), 'utf8'));
    try {
      // Both at once on a fresh home: exactly one runs.
      const a = start('node1');
      const b = start('node2');
      const [ra, rb] = await Promise.all([outcome(a), outcome(b)]);
      expect([ra, rb].filter((r) => r === 'listening'), `node1: ${a.stderr()}\nnode2: ${b.stderr()}`).toHaveLength(1);
      const [first, second] = ra === 'listening' ? [a, b] : [b, a];
      expect(ra === 'listening' ? rb : ra).toBe(4);
      const refused = errorOf(second);
      expect(refused.code).toBe('HOME_HELD_BY_HOST');
      expect(refused.details.host).toBe(first.host);
      expect(refused.message).toContain(`in use on host ${first.host}`);
      const held = (await record())!;
      expect(held).toMatchObject({ host: first.host, holder: 'strata daemon', released: false });
      // Its pid as its own namespace numbers it: the first process there.
      expect(refused.details).toMatchObject({ pid: held.pid, since: held.since });

      // The CLI on the other node says where the daemon runs, instead of "daemon: not running".
      const status = onNode(second.host, ['status', '--home', home], env);
      expect(await status.exited, status.stderr()).toBe(0);
      expect(status.stdout()).toContain(`daemon: on ${first.host}, not here`);
      expect(status.stdout()).toContain(`(pid ${held.pid} there) since ${held.since}`);
      const json = onNode(second.host, ['status', '--home', home, '--json'], env);
      expect(await json.exited).toBe(0);
      expect(JSON.parse(json.stdout())).toMatchObject({ running: false, elsewhere: { host: first.host, pid: held.pid } });
      // A command that needs the daemon there: coded, exit 4, naming the host.
      const sync = onNode(second.host, ['sync', 'status', '--home', home, '--json'], env);
      expect(await sync.exited).toBe(4);
      expect(errorOf(sync)).toMatchObject({ code: 'HOME_HELD_BY_HOST', details: { host: first.host } });

      // Frozen past its lease (SIGSTOP): its renewals stop, its locks do not; still refused.
      signalGroup(first, 'SIGSTOP');
      try {
        await sleep(LAPSE_MS + 1_000);
        const frozen = start(second.host);
        expect(await outcome(frozen)).toBe(4);
        expect(errorOf(frozen).message).toContain('still shows its processes holding the home');
      } finally {
        signalGroup(first, 'SIGCONT');
      }
      await waitFor('node1 to renew again', async () => ((await record())!.seq > held.seq + 1 ? true : undefined), 20_000);

      // Killed (-9): the kernel drops its locks, its lease stays until it lapses.
      signalGroup(first, 'SIGKILL');
      await first.exited;
      const last = (await record())!;
      // A starter's own (longer) lease counts too: this one finds the dead node's lease live however
      // long a loaded machine takes to start it.
      const early = start(second.host, 60_000);
      expect(await outcome(early)).toBe(4);
      expect(errorOf(early)).toMatchObject({ code: 'HOME_HELD_BY_HOST', details: { host: first.host, pid: last.pid } });
      await waitFor('the lease to lapse', () => (Date.now() - Date.parse(last.renewedAt) > LAPSE_MS + 200 ? true : undefined), 30_000);
      const takeover = start(second.host);
      expect(await outcome(takeover), takeover.stderr()).toBe('listening');
      expect(takeover.stderr()).toContain(`last used on host ${first.host}`);
      const taken = (await record())!;
      expect(taken).toMatchObject({ host: second.host, released: false });
      expect(Date.parse(taken.since) - Date.parse(last.renewedAt)).toBeGreaterThanOrEqual(LAPSE_MS);

      // Now the first node is the one refused.
      const back = start(first.host);
      expect(await outcome(back)).toBe(4);
      expect(errorOf(back).details.host).toBe(second.host);

      // A clean stop releases the home: the other node starts at once, without waiting for a lapse.
      signalGroup(takeover, 'SIGTERM');
      expect(await takeover.exited).toBe(0);
      expect((await record())?.released).toBe(true);
      const again = start(first.host);
      expect(await outcome(again), again.stderr()).toBe('listening');
      expect(again.stderr()).not.toContain('last used on');
      signalGroup(again, 'SIGTERM');
      expect(await again.exited).toBe(0);
    } finally {
      for (const node of started) signalGroup(node, 'SIGKILL');
      await Promise.all(started.map((node) => node.exited));
      await dir.remove();
    }
  }, 240_000);
});
