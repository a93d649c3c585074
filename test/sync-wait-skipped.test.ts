// `strata sync wait` with a version this workstation cannot take: the server holds a file 'fd' while
// B, offline meanwhile, made a directory 'fd' (B's files below it reach the server as a conflict copy;
// the server's file cannot be written here). sync wait said "in sync" and nothing else; it must say
// what was not synced, where a user (or a CI log) sees it.
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
  it('names them instead of a bare "in sync"', async () => {
    await allInSync([a, b]);
    await b.stop();
    await writeFile(join(a.dir, 'fd'), 'a file on A\n');
    await allInSync([a]);
    await mkdir(join(b.dir, 'fd'));
    await writeFile(join(b.dir, 'fd', 'inner.txt'), 'in a directory on B\n');
    await b.start();
    const skipped = async () => ((await b.syncStatus())[0]?.sync as { skipped?: Record<string, number> } | undefined)?.skipped ?? {};
    await waitFor('B to skip the server file', async () => (Object.keys(await skipped()).length > 0 ? true : undefined), 60_000);
    const wait = await b.cli(['sync', 'wait', '--timeout', '60']);
    expect(wait.code, wait.stderr).toBe(0);
    expect(wait.stderr).toMatch(/not synced: 1 version \('fd' is a directory\); see strata sync status/);
  }, 240_000);
});
