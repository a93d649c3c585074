// The incoming mass-delete guard on a mounted clone, real processes on loopback: A (watch mode)
// deletes 25 of its 120 files (about 21 %, under the quarter the README names); B, the project
// mounted (FUSE), applies them. Its measure was the mount's own count of files, which knows only the
// files the kernel has looked up (a stale count, or none at all): B held the deletions and stopped
// pulling anything until `strata sync confirm`.
import { execFile } from 'node:child_process';
import { access, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allInSync, fsckFailures, openSyncWorld, type SyncWorld, waitFor, type Workstation } from './sync-harness.js';

let world: SyncWorld;
let a: Workstation;
let b: Workstation;

async function unmount(dir: string): Promise<void> {
  await promisify(execFile)('fusermount3', ['-uz', dir], { timeout: 10_000 }).catch(() => undefined);
}

beforeAll(async () => {
  world = await openSyncWorld('strata-sync-guard-mount-');
  a = world.workstation('wsA');
  b = world.workstation('wsB');
  await mkdir(join(a.dir, 'small'), { recursive: true });
  for (let i = 0; i < 95; i++) await writeFile(join(a.dir, `keep${i}.txt`), `keep ${i}\n`);
  for (let i = 0; i < 25; i++) await writeFile(join(a.dir, 'small', `s${i}.txt`), `small ${i}\n`);
  await a.start();
  await b.start();
  const init = await a.cli(['init', a.dir, '--server', world.url, '--project', world.projectId]);
  expect(init.code, init.stderr).toBe(0);
  const clone = await b.cli(['clone', world.url, world.projectId, b.dir, '--mount']);
  expect(clone.code, clone.stderr).toBe(0);
}, 180_000);

afterAll(async () => {
  try {
    await world?.dispose();
  } finally {
    if (b !== undefined) await unmount(b.dir);
  }
}, 60_000);

describe('incoming mass-delete guard on a mount', () => {
  it('a deletion of under a quarter of the project is applied on the mounted clone, not held', async () => {
    await allInSync([a, b]);
    await waitFor('B shows the files', async () => (await access(join(b.dir, 'small', 's24.txt')).then(() => true, () => false)) || undefined, 60_000);
    await rm(join(a.dir, 'small'), { recursive: true });
    await waitFor('B applied the deletions', async () => (await access(join(b.dir, 'small', 's0.txt')).then(() => false, () => true)) || undefined, 60_000);
    const [project] = await b.syncStatus();
    expect(project!.sync.held).toBeNull();
    await allInSync([a, b]);
    expect(await fsckFailures(world, [a, b])).toEqual([]);
  }, 240_000);
});
