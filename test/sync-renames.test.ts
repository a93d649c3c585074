// Directory renames between two workstations (issue 38 items 1 and 2), real processes on loopback: a
// `strata serve`, two homes with their own `strata daemon` in watch mode. A rename is not a deletion:
// `mv m m2` on A must reach B as the same files under the new names — no content downloaded, never
// held by B's incoming mass-delete guard — and A's own `mv` of nearly the whole project must not trip
// A's local guard (which stopped every incoming change on A while `sync wait` said "in sync").
import { mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson } from './cli-harness.js';
import { allInSync, openSyncWorld, type SyncProject, type SyncWorld, type Workstation, waitFor } from './sync-harness.js';

interface SyncFigures extends Omit<SyncProject['sync'], 'state'> {
  state: string;
  downloadedBytes: number;
  downloadedObjects: number;
}

async function syncOf(ws: Workstation): Promise<SyncFigures> {
  const [project] = await ws.syncStatus();
  return project!.sync as SyncFigures;
}

async function guardOf(ws: Workstation): Promise<{ tripped: boolean; missing: number }> {
  const result = await ws.cli(['status', '--json'], { cwd: ws.dir });
  expect(result.code, result.stderr).toBe(0);
  const status = parseJson<{ projects?: Array<{ massDeleteGuard: { tripped: boolean; missing: number } }>; massDeleteGuard?: { tripped: boolean; missing: number } }>(result);
  return status.massDeleteGuard ?? status.projects![0]!.massDeleteGuard;
}

async function filesIn(dir: string): Promise<string[]> {
  return (await readdir(dir).catch(() => [] as string[])).sort();
}

/** Until B has exactly `names` in `to` and nothing left at `from`; fails at once if B holds anything. */
async function arrived(b: Workstation, from: string, to: string, names: string[], timeoutMs: number): Promise<void> {
  const want = JSON.stringify([...names].sort());
  await waitFor(
    `${to} on B with ${names.length} files and ${from} gone`,
    async () => {
      const held = (await syncOf(b)).held;
      if (held !== null) throw new Error(`B held the rename as a deletion: ${JSON.stringify(held)}`);
      return JSON.stringify(await filesIn(join(b.dir, to))) === want && (await filesIn(join(b.dir, from))).length === 0 ? true : undefined;
    },
    timeoutMs,
  ).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}\nB log:\n${b.daemonLog().slice(-3000)}`);
  });
}

describe('directory renames between workstations', () => {
  let world: SyncWorld;
  let a: Workstation;
  let b: Workstation;

  beforeAll(async () => {
    world = await openSyncWorld('strata-renames-');
    a = world.workstation('wsA');
    b = world.workstation('wsB');
    await mkdir(a.dir, { recursive: true });
    await writeFile(join(a.dir, 'README.md'), '# thesis\n');
    await a.start();
    await b.start();
    const init = await a.cli(['init', a.dir, '--server', world.url, '--project', world.projectId]);
    expect(init.code, init.stderr).toBe(0);
    const clone = await b.cli(['clone', world.url, world.projectId, b.dir]);
    expect(clone.code, clone.stderr).toBe(0);
  }, 120_000);

  afterAll(async () => {
    await world?.dispose();
  }, 60_000);

  it('`mv m m2` of 100 files on A: B renames them, downloads nothing, holds nothing', async () => {
    const names = Array.from({ length: 100 }, (_, i) => `f${String(i).padStart(3, '0')}.txt`);
    await mkdir(join(a.dir, 'm'));
    for (const name of names) await writeFile(join(a.dir, 'm', name), `content of ${name}\n`);
    await allInSync([a, b]);
    expect(await filesIn(join(b.dir, 'm'))).toEqual(names);
    const before = await syncOf(b);
    const inodes = await Promise.all(names.map(async (name) => (await stat(join(b.dir, 'm', name))).ino));

    await rename(join(a.dir, 'm'), join(a.dir, 'm2'));
    await arrived(b, 'm', 'm2', names, 60_000);
    await allInSync([a, b]);
    const after = await syncOf(b);
    expect(after.held).toBeNull();
    expect(after.downloadedBytes - before.downloadedBytes).toBe(0);
    expect(after.downloadedObjects - before.downloadedObjects).toBe(0);
    // Renamed on B's disk, not written again: the same files (inodes), and the emptied directory gone.
    expect(await Promise.all(names.map(async (name) => (await stat(join(b.dir, 'm2', name))).ino))).toEqual(inodes);
    expect(await stat(join(b.dir, 'm')).catch(() => null)).toBeNull();
    expect(await readFile(join(b.dir, 'm2', names[7]!), 'utf8')).toBe(`content of ${names[7]}\n`);
    expect(b.daemonLog()).not.toMatch(/held|MASS DELETE/i);
    // A recorded renames, not a guarded deletion.
    expect((await guardOf(a)).tripped).toBe(false);
  }, 180_000);

  it("A's own `mv big big2` of 99% of the project does not trip A's guard, and B follows without a hold", async () => {
    const names = Array.from({ length: 2000 }, (_, i) => `d${String(i).padStart(4, '0')}.dat`);
    await mkdir(join(a.dir, 'big'));
    await Promise.all(names.map((name) => writeFile(join(a.dir, 'big', name), `data ${name}\n`)));
    await allInSync([a, b], 300);
    expect(await filesIn(join(b.dir, 'big'))).toHaveLength(2000);
    const before = await syncOf(b);

    await rename(join(a.dir, 'big'), join(a.dir, 'big2'));
    await arrived(b, 'big', 'big2', names, 120_000);
    await allInSync([a, b], 300);
    expect((await guardOf(a)).tripped).toBe(false);
    const after = await syncOf(b);
    expect(after.held).toBeNull();
    expect(after.downloadedBytes - before.downloadedBytes).toBe(0);
    // And A still applies what B does (the drift of item 1: a tripped guard stopped every incoming change).
    await writeFile(join(b.dir, 'from-b.txt'), 'written on B\n');
    await allInSync([a, b]);
    expect(await filesIn(a.dir)).toContain('from-b.txt');
  }, 600_000);
});
