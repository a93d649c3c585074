// A directory moved on a watching workstation to a name the project cannot take (the sync model's
// seed 45000 path 3, a truth violation): B ran `mv a b/a/a` while B's project had A's file `b/a`
// (pulled, not on B's disk yet). The files arrived at their new names and were kept below a conflict
// copy of `b/a`; the deletions of their old names, waiting to settle, had been cancelled by the
// renames, which the project then refused. `a/b` stayed in the project, on the server's head, and on
// no disk of B's, and B's `sync wait` said in sync.
//
// Forced here without a race: an editor's swap file in B's directory `b/a` keeps A's file `b/a` off
// B's disk (a directory holding what the project does not have never gives way) while B moves `a`
// there; the swap file then goes, and the directory makes way.
import { lstat, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from './daemon-harness.js';
import { diskFiles, headFiles } from './model/sync-checks.js';
import { openModelWorld, type Station, type SyncModelWorld } from './model/sync-world.js';
import { diffTrees } from './model/tree.js';

let world: SyncModelWorld | null = null;
afterEach(async () => {
  await world?.dispose();
  world = null;
}, 120_000);

async function syncWait(station: Station): Promise<{ code: number | null; stderr: string }> {
  return world!.cli(station, ['sync', 'wait', '--timeout', '60'], 120_000);
}

describe('a move the project refuses on a watching workstation', () => {
  it('records the deletion of the old names: the moved files are on no disk at their old names, and on no head either', { timeout: 400_000 }, async () => {
    world = await openModelWorld({ workstations: 2, mount: false });
    await world.newProject();
    const [a, b] = world.stations as [Station, Station];
    // B: the file `b` becomes a directory `b/a` holding only a swap file (ignored: never versioned).
    await rm(join(b.ws.dir, 'b'));
    await mkdir(join(b.ws.dir, 'b', 'a'), { recursive: true });
    await writeFile(join(b.ws.dir, 'b', 'a', 'y.swp'), 'editor state\n');
    expect((await syncWait(b)).code).toBe(0);
    expect((await syncWait(a)).code).toBe(0);
    // A: a file `b/a`. B's project takes it; B's directory stays in its way.
    await mkdir(join(a.ws.dir, 'b'), { recursive: true });
    await writeFile(join(a.ws.dir, 'b', 'a'), 'v42\n');
    expect((await syncWait(a)).code).toBe(0);
    await waitFor('B to have the file b/a in its project', async () => ((await headFiles(b.ws)).get('b/a')?.type === 'file' ? true : undefined), 60_000);
    // B moves `a` below its directory `b/a`: the project has a file there, so the new names are refused.
    await rename(join(b.ws.dir, 'a'), join(b.ws.dir, 'b', 'a', 'a'));
    await b.ws.quiet();
    // The swap file goes: B's directory makes way for A's file (its files are the conflict copies).
    await rm(join(b.ws.dir, 'b', 'a', 'y.swp'));
    // Between the directory's removal and the file's arrival there is nothing at `b/a` (ENOENT): not yet.
    await waitFor('B to bring the file b/a to disk', async () => ((await lstat(join(b.ws.dir, 'b', 'a')).catch(() => null))?.isFile() ? true : undefined), 90_000);
    for (const station of [b, a]) {
      const wait = await syncWait(station);
      expect(wait.code, `${station.name}: ${wait.stderr}`).toBe(0);
    }
    const head = await headFiles(world.server);
    for (const station of [a, b]) expect(diffTrees(await diskFiles(station), head, { actual: 'disk', expected: 'head' }), station.name).toEqual([]);
    // B moved `a` away: its old names are deleted, and its files are on the head as conflict copies.
    expect([...head.keys()].filter((path) => path.startsWith('a/'))).toEqual([]);
    expect([...head.keys()].filter((path) => path.startsWith('b/a (conflict wsB ')).sort()).toHaveLength(2);
  });
});
