// `strata watch --poll [INTERVAL]` (issue 38 item 13): other machines' writes to a watched directory
// on a network filesystem make no inotify events here, and on a FUSE client Strata does not recognise
// (JuiceFS, s3ql ...) they waited for the 10-minute reconciliation, under a plain "watching" and a
// warning that blamed the inotify queue. The stand-in for such a filesystem: a bindfs (FUSE) view of a
// directory, written to underneath, where no event reaches the view either. Real daemon, real CLI.

import type { spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ProjectStatus } from '../daemon/project-runner.js';
import { baseEnv, parseJson, runCli, startListening, tempDir } from './cli-harness.js';
import { sh, waitFor } from './daemon-harness.js';

interface StatusDoc {
  projects: ProjectStatus[];
}

function stopChild(child: ReturnType<typeof spawn>): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('exit', () => {
      clearTimeout(killer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

describe('strata watch --poll', () => {
  it('versions writes no event reports, is kept for the project across restarts, shown in status, and --no-poll goes back to events', async () => {
    const dir = await tempDir('strata-poll-');
    const home = join(dir.path, 'home');
    const backing = join(dir.path, 'backing');
    const view = join(dir.path, 'view');
    await mkdir(backing);
    await mkdir(view);
    // A reconciliation soon enough to see what the events missed, late enough to show they missed it.
    const env = { ...baseEnv(join(dir.path, 'config')), STRATA_WATCH_RECONCILE_MS: '8000' };
    const daemons: Array<ReturnType<typeof spawn>> = [];
    const status = async () => parseJson<StatusDoc>(await runCli(['status', '--home', home, '--json'], env, { timeoutMs: 30_000 })).projects[0]!;
    const versioned = async (path: string) => {
      const result = await runCli(['history', path, '--json'], env, { cwd: view, timeoutMs: 30_000 });
      return result.code === 0 && (JSON.parse(result.stdout) as { items: unknown[] }).items.length > 0;
    };
    const startDaemon = async () => {
      const { child } = await startListening(['daemon', '--home', home, '--listen', '127.0.0.1:0'], env, 60_000);
      daemons.push(child);
      return child;
    };
    await sh('bindfs', [backing, view]);
    try {
      const init = await runCli(['init', view, '--home', home], env, { timeoutMs: 30_000 });
      expect(init.code, init.stderr).toBe(0);
      let daemon = await startDaemon();
      await waitFor('watching', async () => ((await status()).state === 'watching' ? true : undefined), 30_000);
      expect((await status()).backend).toBe('inotify');

      // The defect: written where the view's events do not come from, nothing versions it but the
      // reconciliation, which counts it among what events missed (no fixed wait: a loaded machine's
      // reconciliation may come at any moment), and whose warning now points at --poll on FUSE.
      const missedBefore = (await status()).reconcile?.missedTotal ?? 0;
      await writeFile(join(backing, 'a.txt'), 'from another machine\n');
      await waitFor('the reconciliation to find a.txt', () => versioned('a.txt').then((v) => (v ? true : undefined)), 60_000);
      const warned = await status();
      expect(warned.reconcile?.missedTotal ?? 0).toBeGreaterThan(missedBefore);
      const warning = warned.warnings.find((w) => w.includes('file events had missed'));
      expect(warning).toContain(`strata watch --poll ${view}`);
      expect(warning).toContain('on fuse');

      // The switch, through the running daemon: polled every second from now on.
      const poll = await runCli(['watch', view, '--poll', '1s', '--home', home], env, { timeoutMs: 60_000 });
      expect(poll.code, poll.stderr).toBe(0);
      expect(poll.stdout).toContain('(polling every 1 s)');
      await waitFor('polling', async () => ((await status()).backend === 'polling' ? true : undefined), 30_000);
      expect((await status()).poll).toEqual({ intervalMs: 1_000, reason: 'setting' });
      // No reconciler while polling: its inotify advice is gone with it.
      expect((await status()).warnings.some((w) => w.includes('inotify queue'))).toBe(false);
      const human = await runCli(['status', '--home', home], env, { timeoutMs: 30_000 });
      expect(human.stdout).toContain('(polling every 1.0 s, --poll)');
      const written = Date.now();
      await writeFile(join(backing, 'b.txt'), 'polled\n');
      await waitFor('b.txt polled', () => versioned('b.txt').then((v) => (v ? true : undefined)), 20_000);
      // Well inside the reconciliation interval: the poll found it (1 s poll + bindfs's 1 s attribute cache).
      expect(Date.now() - written).toBeLessThan(8_000);
      const config = JSON.parse(await readFile(join(home, 'daemon.json'), 'utf8')) as { projects: Array<{ pollMs?: number }> };
      expect(config.projects[0]?.pollMs).toBe(1_000);

      // Kept: a restarted daemon polls the project again.
      await stopChild(daemon);
      daemon = await startDaemon();
      await waitFor('polling after the restart', async () => ((await status()).poll?.reason === 'setting' ? true : undefined), 30_000);
      await writeFile(join(backing, 'c.txt'), 'polled after a restart\n');
      await waitFor('c.txt polled', () => versioned('c.txt').then((v) => (v ? true : undefined)), 20_000);

      // --no-poll: back to events, and out of daemon.json.
      const events = await runCli(['watch', view, '--no-poll', '--home', home], env, { timeoutMs: 60_000 });
      expect(events.code, events.stderr).toBe(0);
      await waitFor('inotify again', async () => ((await status()).backend === 'inotify' ? true : undefined), 30_000);
      expect((await status()).poll).toBeNull();
      const after = JSON.parse(await readFile(join(home, 'daemon.json'), 'utf8')) as { projects: Array<{ pollMs?: number }> };
      expect(after.projects[0]).not.toHaveProperty('pollMs');

      // An interval out of bounds is a usage error, named.
      const bad = await runCli(['watch', view, '--poll', '10ms', '--home', home, '--json'], env, { timeoutMs: 30_000 });
      expect(bad.code).toBe(2);
      expect(bad.stdout).toContain('--poll takes an interval');
    } finally {
      await Promise.all(daemons.map(stopChild));
      await sh('fusermount', ['-uz', view], { allowFail: true });
      await dir.remove();
    }
  }, 300_000);
});
