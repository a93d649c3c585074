// A file from elsewhere that cannot be written into its directory on disk (here an immutable
// directory: EPERM, even for root) is tried again, with a growing delay, and never given up on. It
// was tried 8 times and then only when the project changed the path again, so once the user removed
// the cause (`chattr -i d`, `chmod u+w d`) the file stayed off disk and `sync wait` said "could not
// be written here" until the daemon restarted. And when the user writes the path here themselves,
// what is on disk is the project's newest version of it: the problem goes at once (this process's own
// versions are not in the feed the rounds read, so nothing told them).
//
// The retry timings are shortened (incomingRetry) so the old limit is passed in seconds; the log
// shows each attempt, which is how the test knows the old limit is behind it.

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sh, type WatchedProject, waitFor, watchProject } from './daemon-harness.js';

const asRoot = process.getuid?.() === 0;
let w: WatchedProject;
/** the same, with a retry a minute away: only the user's own write can end the problem in time */
let slow: WatchedProject;
const attempts = new Map<string, number>();
const immutable: string[] = [];

// Each 'could not bring a path to disk' warning carries the path and its attempt.
const logger = pino(
  { level: 'warn' },
  {
    write(line: string) {
      const entry = JSON.parse(line) as { msg?: string; path?: string; attempts?: number };
      if (entry.msg === 'could not bring a path to disk' && entry.path !== undefined) attempts.set(entry.path, Math.max(attempts.get(entry.path) ?? 0, entry.attempts ?? 0));
    },
  },
);

beforeAll(async () => {
  if (!asRoot) return;
  w = await watchProject({ logger, watch: { feedPollMs: 50, incomingRetry: { baseMs: 20, failedCapMs: 300 } } });
  slow = await watchProject({ logger, watch: { feedPollMs: 50, incomingRetry: { baseMs: 60_000, failedCapMs: 60_000 } } });
});

afterAll(async () => {
  for (const dir of immutable) await sh('chattr', ['-i', dir], { allowFail: true });
  await w?.dispose();
  await slow?.dispose();
});

async function put(w: WatchedProject, path: string, body: string): Promise<void> {
  const response = await fetch(`${w.daemon.url}/v1/projects/${w.projectId}/fs/write?path=${encodeURIComponent(path)}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${w.daemon.owner.apiKey}`, 'content-type': 'application/octet-stream' },
    body,
  });
  expect(response.status).toBe(201);
}

async function notOnDisk(w: WatchedProject): Promise<number> {
  const status = (await w.status()) as unknown as { incoming?: { notOnDisk: { count: number } } };
  return status.incoming?.notOnDisk.count ?? 0;
}

/** `dir` (made and versioned through a file in it) made immutable, and `path` below it written elsewhere, tried `tries` times. */
async function blocked(w: WatchedProject, dir: string, path: string, tries: number): Promise<void> {
  await mkdir(join(w.dir, dir));
  await writeFile(join(w.dir, dir, 'keep'), 'keep\n');
  await waitFor(`${dir}/keep versioned`, async () => ((await w.history(`${dir}/keep`)).length > 0 ? true : undefined), 20_000);
  await sh('chattr', ['+i', join(w.dir, dir)]);
  immutable.push(join(w.dir, dir));
  await put(w, path, 'from elsewhere\n');
  await waitFor(`${path} tried ${tries} time(s)`, async () => ((attempts.get(path) ?? 0) >= tries ? true : undefined), 30_000);
  expect(await notOnDisk(w)).toBeGreaterThan(0);
}

describe.skipIf(!asRoot)('a path that cannot be written here', () => {
  it('comes to disk once the cause is gone, without a change of the path', async () => {
    // Past the old limit of 8 attempts.
    await blocked(w, 'a', 'a/f', 10);
    await sh('chattr', ['-i', join(w.dir, 'a')]);
    await waitFor('a/f on disk', async () => ((await readFile(join(w.dir, 'a', 'f'), 'utf8').catch(() => null)) === 'from elsewhere\n' ? true : undefined), 20_000);
    await waitFor('nothing left off disk', async () => ((await notOnDisk(w)) === 0 ? true : undefined), 20_000);
  });

  it('is no longer a problem once the user writes it here', async () => {
    await blocked(slow, 'b', 'b/f', 1);
    // The user's own file there, once the directory can take it: the project's newest version of b/f.
    await sh('chattr', ['-i', join(slow.dir, 'b')]);
    await writeFile(join(slow.dir, 'b', 'f'), 'mine\n');
    await waitFor('the problem gone', async () => ((await notOnDisk(slow)) === 0 ? true : undefined), 20_000);
    expect(await readFile(join(slow.dir, 'b', 'f'), 'utf8')).toBe('mine\n');
    expect(await slow.read('b/f')).toBe('mine\n');
  });
});
