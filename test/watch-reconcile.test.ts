// Watch mode's reconciliation: changes whose file events were really lost — an overflowed inotify
// queue, a watch that broke — are versioned exactly once by a catch-up scan that reads nothing else,
// and `strata status` (the daemon's HTTP status route) says when it ran and what it found.

import { spawn } from 'node:child_process';
import { existsSync, type FSWatcher, readFileSync, statSync, watch } from 'node:fs';
import { mkdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { WatchReconcileStatus } from '../daemon/host.js';
import { sleep, type WatchedProject, waitFor, watchProject } from './daemon-harness.js';

let w: WatchedProject | undefined;
afterEach(async () => {
  await w?.dispose();
  w = undefined;
});

/** Files written with an old mtime (no racy-mtime re-hash: examine.ts RACY_NS). */
async function oldFiles(dir: string, names: string[]): Promise<void> {
  const mtime = new Date(Date.now() - 86_400_000);
  for (const name of names) {
    await writeFile(join(dir, name), `${name} v1\n`);
    await utimes(join(dir, name), mtime, mtime);
  }
}

/**
 * Sets atime before mtime (ctime moves; the index does not compare it), so that under relatime the
 * next read of the file moves its atime: a re-hash would show. Returns the atimes.
 */
async function armAtimes(dir: string, names: string[]): Promise<number[]> {
  const atime = new Date(Date.now() - 2 * 86_400_000);
  for (const name of names) await utimes(join(dir, name), atime, statSync(join(dir, name)).mtime);
  return names.map((name) => statSync(join(dir, name)).atimeMs);
}

/** fs.watch, remembering each directory's watcher so a test can break one. */
function trackingWatch(): { watch: typeof watch; byDir: Map<string, FSWatcher> } {
  const byDir = new Map<string, FSWatcher>();
  const tracked = ((path: string, options: unknown, listener: unknown) => {
    const watcher = (watch as unknown as (p: string, o: unknown, l: unknown) => FSWatcher)(path, options, listener);
    byDir.set(path, watcher);
    return watcher;
  }) as typeof watch;
  return { watch: tracked, byDir };
}

async function reconciled(project: WatchedProject, check: (r: WatchReconcileStatus) => boolean): Promise<WatchReconcileStatus> {
  return waitFor('a reconciliation', async () => {
    const r = (await project.status()).reconcile;
    return r !== null && !r.running && check(r) ? r : undefined;
  });
}

const keep = Array.from({ length: 20 }, (_, i) => `keep/f${i}.txt`);

describe('watch-mode reconciliation', () => {
  it('an overflowed inotify queue drops an event; the burst brings a reconciliation that versions it once and reads nothing else', { timeout: 150_000 }, async () => {
    w = await watchProject({
      watch: { reconcileMs: 0, reconcileDebounceMs: 200 },
      prepare: async (dir) => {
        await writeFile(join(dir, '.strataignore'), '*.flood\n');
        await mkdir(join(dir, 'keep'));
        await oldFiles(dir, [...keep, 'keep/target.txt']);
      },
    });
    await w.idle();
    expect(await w.history('keep/target.txt')).toHaveLength(1);
    expect((await w.status()).reconcile).toMatchObject({ intervalMs: 0, runs: 0, last: null });
    const atimes = await armAtimes(w.dir, keep);

    // A child creates and deletes an ignored file max_queued_events times (two events each, never
    // coalesced: consecutive events differ), then changes target.txt. This process — the daemon's —
    // does not read events meanwhile, so the kernel queue overflows and target's event is dropped.
    const queue = Number(readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8'));
    const marker = join(w.dir, '..', 'flood-done');
    const script =
      "const fs = require('fs'); const [dir, marker, n] = process.argv.slice(1);" +
      "for (let i = 0; i < Number(n); i++) { fs.writeFileSync(dir + '/x.flood', ''); fs.unlinkSync(dir + '/x.flood'); }" +
      "fs.writeFileSync(dir + '/keep/target.txt', 'target v2, written during the flood\\n'); fs.writeFileSync(marker, 'done');";
    const child = spawn(process.execPath, ['-e', script, w.dir, marker, String(queue)], { stdio: ['ignore', 'ignore', 'pipe'] });
    const stderr: Buffer[] = [];
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const cell = new Int32Array(new SharedArrayBuffer(4));
    // 2 × max_queued_events metadata operations: well under a second alone, but a CI run's parallel
    // fsync-heavy tests (the crash storms) can slow the journal down by an order of magnitude.
    const deadline = Date.now() + 90_000;
    while (!existsSync(marker) && Date.now() < deadline) Atomics.wait(cell, 0, 0, 5); // blocks this event loop, idle
    if (!existsSync(marker)) {
      child.kill();
      throw new Error(`the flood did not finish (exit ${await exited}): ${Buffer.concat(stderr).toString().slice(0, 2000)}`);
    }
    await exited;

    const r = await reconciled(w, (s) => s.runs >= 1);
    expect(r.last).toMatchObject({ reason: 'event-burst', examined: keep.length + 2, hashed: 1, missed: 1 });
    expect(r.missedTotal).toBe(1);
    expect(r.last!.durationMs).toBeGreaterThanOrEqual(0);
    expect(Date.parse(r.last!.finishedAt)).toBeGreaterThanOrEqual(Date.parse(r.last!.startedAt));
    const history = await w.history('keep/target.txt');
    expect(history).toHaveLength(2);
    expect(await w.read('keep/target.txt')).toBe('target v2, written during the flood\n');
    for (const name of keep) expect(await w.history(name), name).toHaveLength(1);
    // Only target.txt was read: the others' atimes did not move.
    expect(keep.map((name) => statSync(join(w!.dir, name)).atimeMs)).toEqual(atimes);
    const status = await w.status();
    expect(status.warnings.join('\n')).toMatch(/reconciliation found 1 change\(s\) that file events had missed/);
    expect(status.mount).toBeNull();
  });

  it('a watch that errors brings a prompt reconciliation, and its directory is watched again', async () => {
    const tracking = trackingWatch();
    w = await watchProject({
      watch: { watch: tracking.watch, reconcileMs: 0, reconcileDebounceMs: 200 },
      prepare: async (dir) => {
        await mkdir(join(dir, 'broken'));
        await mkdir(join(dir, 'fine'));
        await oldFiles(dir, ['broken/a.txt', 'broken/b.txt', 'fine/c.txt']);
      },
    });
    await w.idle();
    const watcher = tracking.byDir.get(join(w.dir, 'broken'))!;
    // The kernel watch goes away without a word (as when inotify drops it); writes there are lost.
    watcher.close();
    await writeFile(join(w.dir, 'broken/a.txt'), 'a v2\n');
    await writeFile(join(w.dir, 'broken/new.txt'), 'new\n');
    await sleep(600);
    expect(await w.history('broken/a.txt')).toHaveLength(1);
    expect(await w.history('broken/new.txt')).toHaveLength(0);

    watcher.emit('error', Object.assign(new Error('EIO: the watch broke'), { code: 'EIO' }));
    const r = await reconciled(w, (s) => s.runs >= 1);
    expect(r.last).toMatchObject({ reason: 'watch-error', examined: 4, hashed: 2, missed: 2 });
    expect(await w.history('broken/a.txt')).toHaveLength(2);
    expect(await w.history('broken/new.txt')).toHaveLength(1);
    expect(await w.history('broken/b.txt')).toHaveLength(1);

    // Watched again: the next write arrives as an event, with no reconciliation.
    await writeFile(join(w.dir, 'broken/after.txt'), 'after\n');
    await waitFor('broken/after.txt versioned by its event', async () => ((await w!.history('broken/after.txt')).length === 1 ? true : undefined), 5_000);
    expect((await w.status()).reconcile).toMatchObject({ runs: 1, missedTotal: 2 });
  });

  it('runs every intervalMs, one at a time, and finds nothing when nothing was missed', async () => {
    const tracking = trackingWatch();
    w = await watchProject({
      watch: { watch: tracking.watch, reconcileMs: 800, reconcileDebounceMs: 200 },
      prepare: async (dir) => {
        await mkdir(join(dir, 'quiet'));
        await oldFiles(dir, ['quiet/q.txt', 'top.txt']);
      },
    });
    await w.idle();
    const first = await reconciled(w, (s) => s.runs >= 1);
    expect(first.last).toMatchObject({ reason: 'interval', examined: 2, hashed: 0, missed: 0 });
    expect((await w.status()).warnings).toEqual([]);

    // A silently closed watch and no error at all: only the periodic run can find this.
    tracking.byDir.get(join(w.dir, 'quiet'))!.close();
    const changedAt = Date.now();
    await writeFile(join(w.dir, 'quiet/q.txt'), 'q v2\n');
    const found = await reconciled(w, (s) => s.missedTotal > 0);
    expect(found.last).toMatchObject({ reason: 'interval', hashed: 1, missed: 1 });
    expect(Date.parse(found.last!.startedAt)).toBeGreaterThanOrEqual(changedAt - 5);
    expect(await w.history('quiet/q.txt')).toHaveLength(2);

    // Three requests at once: one run, plus one follow-up (a request during a run may concern a
    // directory it already passed) — never three, never two at the same time.
    const host = w.daemon.project(w.projectId)!.host!;
    // Read synchronously around the calls: no periodic run can slip in between.
    const before = host.status().reconcile!.runs;
    await Promise.all([host.reconcile!(), host.reconcile!(), host.reconcile!()]);
    const after = host.status().reconcile!;
    expect(after.runs - before).toBe(2);
    expect(after.last).toMatchObject({ reason: 'manual', missed: 0, hashed: 0 });
    expect(await w.history('quiet/q.txt')).toHaveLength(2);
  });
});
