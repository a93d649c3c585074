// `strata sync wait` with a version this workstation cannot take: the server holds a file 'fd' while
// B, offline meanwhile, made a directory 'fd' (B's files below it reach the server as a conflict copy;
// the server's file cannot be written here). sync wait said "in sync" and nothing else; then "in sync"
// with a warning. The trees differ, so it is not in sync (issue 38): sync wait stops with the reason.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allInSync, openSyncWorld, type SyncWorld, waitFor, type Workstation } from './sync-harness.js';

let world: SyncWorld;
let a: Workstation;
let b: Workstation;

beforeAll(async () => {
  world = await openSyncWorld('strata-sync-wait-skipped-');
  a = world.workstation('wsA');
  b = world.workstation('wsB');
  await mkdir(a.dir, { recursive: true });
  await writeFile(join(a.dir, 'start.txt'), 'start\n');
  await a.start();
  await b.start();
  expect((await a.cli(['init', a.dir, '--server', world.url, '--project', world.projectId])).code).toBe(0);
  const clone = await b.cli(['clone', world.url, world.projectId, b.dir]);
  expect(clone.code, clone.stderr).toBe(0);
}, 180_000);

afterAll(async () => {
  await world?.dispose();
}, 60_000);

describe('sync wait and versions this workstation cannot take', () => {
  it('is not in sync, and says why at once', async () => {
    await allInSync([a, b]);
    await b.stop();
    await writeFile(join(a.dir, 'fd'), 'a file on A\n');
    await allInSync([a]);
    await mkdir(join(b.dir, 'fd'));
    await writeFile(join(b.dir, 'fd', 'inner.txt'), 'in a directory on B\n');
    // An ignored file too: without it the directory, its one file kept on the server as a copy, now
    // makes way for the server's file (sync-make-way-above.ts); with it, that would lose the file.
    await writeFile(join(b.dir, 'fd', 'notes.swp'), 'editor state\n');
    await b.start();
    const skipped = async () => ((await b.syncStatus())[0]?.sync as { skipped?: Record<string, number> } | undefined)?.skipped ?? {};
    await waitFor('B to skip the server file', async () => (Object.keys(await skipped()).length > 0 ? true : undefined), 60_000);
    // Not in sync, and said at once: waiting will not bring the server's file here (exit 4, SYNC_BLOCKED).
    const wait = await b.cli(['sync', 'wait', '--timeout', '60', '--json']);
    expect(wait.code, wait.stderr).toBe(4);
    expect(wait.stderr).toMatch(/is not in sync: 1 version from the server cannot be taken here \('fd' is a directory\)/);
    const [project] = await b.syncStatus();
    expect(project!.sync.inSync).toBe(false);
    const reasons = (project!.sync as { reasons?: Array<{ code: string }> }).reasons ?? [];
    expect(reasons.map((r) => r.code)).toContain('SKIPPED');
    const status = await b.cli(['sync', 'status']);
    expect(status.stdout).toMatch(/not in sync: 1 version from the server cannot be taken here/);
  }, 240_000);
});
