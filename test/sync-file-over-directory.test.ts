// A file that replaced a directory on a workstation while the project got files below that
// directory from elsewhere (the sync model's defect 4, seed 4000 path 7): B replaced the directory
// `c` by a file `c` while A wrote `c/a`. B's deletion of the `c/a` it had gave way to A's newer one,
// and B's file could not be versioned at all ("'c' is a directory"): at the end the server's head had
// A's `c/a` and no trace of B's file (on no server version), and B said "1 file of the project
// could not be written here, e.g. c/a" for good. Now the file is kept as a conflict copy and makes
// way for the directory on B's disk: both sides converge and nothing is lost.
//
// Forced here without a race: with B's daemon stopped, another process on B's home writes `c/b`
// (the project has a file below `c` that B's directory never had, as a pulled one is before it is
// brought to disk), and `c` becomes a file on B's disk.
//
// The other way round (seed 5000, path 6:1, found after those fixes): A truncated the file `b` while
// B ran `rm b; mkdir b; echo v76 > b/a`. B's deletion of `b` gave way to A's edit, `b/a` could not be
// versioned below the file (on no server version), and the directory stayed in the way of A's `b`:
// "1 file of the project could not be written here, e.g. "b"" for good.
//
// A file below a directory whose name the project has as a file this directory never had (pulled,
// not brought to disk yet): the capture took the file above for one the user had removed here and
// recorded its deletion as this workstation's (on the version "this directory last had", and with no
// index row that was whatever was current): the other workstation's file was deleted everywhere. A
// watching workstation that is bringing such a swap (`rm -r a; echo v95 > a` elsewhere) to disk has
// its directory `a` in that state for a moment (seed 42000 of the sync model, with C running: C once
// recorded the deletion of B's `a`).
//
// An edit of a file below a directory whose name the project has as a file from elsewhere, the edited
// file itself deleted there (the sync model's seed 46003 path 17): A ran `rm b; mkdir b; echo v98 >
// b/a` while B replaced `b` by a file; the server kept A's `b/a` below a conflict copy, and A, taking
// B's file, recorded the deletion of its `b/a` (sync-make-way-above.ts). A appended to `b/a` before
// its directory gave way: the write, on a base the engine had moved on from, found `b/a` deleted and
// was written at its own path ("an edit beats a deletion") — below the file `b`. The engine refused it
// (PATH_EXISTS) and the capture failed at every look, for good: `sync wait` never ended. Forced here
// with the engine brought to that state by another process while A's daemon is stopped; and the
// same with a directory where the edited file was.
import { appendFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLocalEngine } from '../engine/local.js';
import { allInSync, fsckFailures, openSyncWorld, type SyncWorld, treeOf, type Workstation, waitFor } from './sync-harness.js';

let world: SyncWorld;

beforeAll(async () => {
  world = await openSyncWorld('strata-sync-file-over-dir-');
}, 120_000);

afterAll(async () => {
  await world?.dispose();
}, 60_000);

/**
 * `sync wait` on each until all exit 0 in one round. Not allInSync: on A, the deletion of `c/a`
 * removes the emptied directory `c` while `c/b` is being written into it (one batch of the incoming
 * side), the write fails with ENOENT and is retried half a second later, but `sync wait` exits 4 at
 * once on that failure (a defect of its own, seen under load; not this test's).
 */
async function settled(workstations: Workstation[]): Promise<void> {
  await waitFor(
    'every sync wait to exit 0',
    async () => {
      for (const ws of workstations) if ((await ws.cli(['sync', 'wait', '--timeout', '60'], { timeoutMs: 90_000 })).code !== 0) return undefined;
      return true;
    },
    240_000,
  );
}

describe('sync: a file where the project has a directory with files from elsewhere', () => {
  it('is kept as a conflict copy, and the directory comes to disk', async () => {
    const a = world.workstation('wsA');
    const b = world.workstation('wsB');
    await a.start();
    await b.start();
    await mkdir(join(a.dir, 'c'), { recursive: true });
    await writeFile(join(a.dir, 'c', 'a'), 'v1\n');
    for (const name of ['a', 'b', 'd']) await writeFile(join(a.dir, name), `${name}\n`);
    expect((await a.cli(['init', a.dir, '--server', world.url, '--project', world.projectId])).code).toBe(0);
    expect((await b.cli(['clone', world.url, world.projectId, b.dir])).code).toBe(0);
    await allInSync([a, b]);
    const projectId = (await b.syncStatus())[0]!.projectId;
    await b.stop();
    const other = await openLocalEngine({ home: b.home });
    try {
      await other.engine.writeFile({ projectId, path: 'c/b', actor: { id: 'other', kind: 'local', name: 'another process' }, content: Buffer.from('from elsewhere\n') });
    } finally {
      await other.close();
    }
    await rm(join(b.dir, 'c'), { recursive: true });
    await writeFile(join(b.dir, 'c'), 'file c on B\n');
    await b.start();
    await settled([a, b]);
    const [onA, onB] = [await treeOf(a.dir), await treeOf(b.dir)];
    expect(onB).toEqual(onA);
    expect(onB['c/b']).toBe('from elsewhere\n');
    expect(onB['c']).toBeUndefined();
    const copies = Object.keys(onB).filter((path) => path.startsWith('c (conflict wsB '));
    expect(copies).toHaveLength(1);
    expect(onB[copies[0]!]).toBe('file c on B\n');
    expect(await fsckFailures(world, [a, b])).toEqual([]);
  }, 300_000);

  it('a file below a directory where the project has a file changed elsewhere: kept below a conflict copy, and the file comes to disk', async () => {
    // Two workstations of their own (the first test's may have failed and left theirs apart).
    const c = world.workstation('wsC');
    const d = world.workstation('wsD');
    await c.start();
    await d.start();
    expect((await c.cli(['clone', world.url, world.projectId, c.dir])).code).toBe(0);
    expect((await d.cli(['clone', world.url, world.projectId, d.dir])).code).toBe(0);
    await writeFile(join(c.dir, 'e'), 'e, v1\n');
    await allInSync([c, d]);
    await waitFor('e on D', async () => ((await treeOf(d.dir))['e'] === 'e, v1\n' ? true : undefined), 60_000);
    const projectId = (await d.syncStatus())[0]!.projectId;
    await d.stop();
    const other = await openLocalEngine({ home: d.home });
    try {
      await other.engine.writeFile({ projectId, path: 'e', actor: { id: 'other', kind: 'local', name: 'another process' }, content: Buffer.from('e, v2 from elsewhere\n') });
    } finally {
      await other.close();
    }
    await rm(join(d.dir, 'e'));
    await mkdir(join(d.dir, 'e'));
    await writeFile(join(d.dir, 'e', 'a'), 'below e on D\n');
    await d.start();
    await allInSync([c, d]);
    const [onC, onD] = [await treeOf(c.dir), await treeOf(d.dir)];
    expect(onD).toEqual(onC);
    expect(onD['e']).toBe('e, v2 from elsewhere\n');
    const copies = Object.keys(onD).filter((path) => path.startsWith('e (conflict wsD ') && path.endsWith('/a'));
    expect(copies).toHaveLength(1);
    expect(onD[copies[0]!]).toBe('below e on D\n');
    expect(await fsckFailures(world, [c, d])).toEqual([]);
  }, 300_000);

  it('a file below a directory where the project has a file this directory never had: kept below a conflict copy, and that file is not deleted', async () => {
    const e = world.workstation('wsE');
    const f = world.workstation('wsF');
    await e.start();
    await f.start();
    expect((await e.cli(['clone', world.url, world.projectId, e.dir])).code).toBe(0);
    expect((await f.cli(['clone', world.url, world.projectId, f.dir])).code).toBe(0);
    await mkdir(join(e.dir, 'g'));
    await writeFile(join(e.dir, 'g', 'a'), 'g/a, v1\n');
    await allInSync([e, f]);
    await waitFor('g/a on F', async () => ((await treeOf(f.dir))['g/a'] === 'g/a, v1\n' ? true : undefined), 60_000);
    const projectId = (await e.syncStatus())[0]!.projectId;
    await e.stop();
    // The swap as E's engine has it before it reaches E's disk: `g/a` deleted, the file `g` there.
    const other = await openLocalEngine({ home: e.home });
    try {
      const actor = { id: 'other', kind: 'local', name: 'another process' } as const;
      await other.engine.deleteFile({ projectId, path: 'g/a', actor });
      await other.engine.writeFile({ projectId, path: 'g', actor, content: Buffer.from('file g from elsewhere\n') });
    } finally {
      await other.close();
    }
    // Meanwhile a new file in E's directory `g` (its catch-up scan versions it before anything comes to disk).
    await writeFile(join(e.dir, 'g', 'x'), 'below g on E\n');
    await e.start();
    await settled([e, f]);
    const [onE, onF] = [await treeOf(e.dir), await treeOf(f.dir)];
    expect(onE).toEqual(onF);
    expect(onF['g']).toBe('file g from elsewhere\n');
    const copies = Object.keys(onF).filter((path) => path.startsWith('g (conflict wsE ') && path.endsWith('/x'));
    expect(copies).toHaveLength(1);
    expect(onF[copies[0]!]).toBe('below g on E\n');
    // No deletion of `g` anywhere in its history (its one version is the write from elsewhere).
    const history = await e.cli(['history', 'g', '--json'], { cwd: e.dir });
    expect(history.code, history.stderr).toBe(0);
    expect((JSON.parse(history.stdout) as { items: Array<{ path: string; kind: string }> }).items.filter((v) => v.path === 'g').map((v) => v.kind)).toEqual(['write']);
    expect(await fsckFailures(world, [e, f])).toEqual([]);
  }, 300_000);

  it('an edit of a file the project deleted, below a name the project has as a file from elsewhere: kept below a conflict copy, and that file comes to disk', async () => {
    const g = world.workstation('wsG');
    const h = world.workstation('wsH');
    await g.start();
    await h.start();
    expect((await g.cli(['clone', world.url, world.projectId, g.dir])).code).toBe(0);
    expect((await h.cli(['clone', world.url, world.projectId, h.dir])).code).toBe(0);
    await mkdir(join(g.dir, 'm'));
    await writeFile(join(g.dir, 'm', 'a'), 'm/a, v1\n');
    await allInSync([g, h]);
    await waitFor('m/a on H', async () => ((await treeOf(h.dir))['m/a'] === 'm/a, v1\n' ? true : undefined), 60_000);
    const projectId = (await g.syncStatus())[0]!.projectId;
    await g.stop();
    // G's engine as after taking a file `m` from elsewhere: its `m/a` deleted (made way), the file `m` there.
    const other = await openLocalEngine({ home: g.home });
    try {
      const actor = { id: 'other', kind: 'local', name: 'another process' } as const;
      await other.engine.deleteFile({ projectId, path: 'm/a', actor });
      await other.engine.writeFile({ projectId, path: 'm', actor, content: Buffer.from('file m from elsewhere\n') });
    } finally {
      await other.close();
    }
    // Meanwhile G's `m/a`, still on its disk, is edited (its catch-up scan versions it before anything comes to disk).
    await appendFile(join(g.dir, 'm', 'a'), '+ edit on G\n');
    await g.start();
    await allInSync([g, h], 60);
    const [onG, onH] = [await treeOf(g.dir), await treeOf(h.dir)];
    expect(onG).toEqual(onH);
    expect(onH['m']).toBe('file m from elsewhere\n');
    const copies = Object.keys(onH).filter((path) => path.startsWith('m (conflict wsG ') && path.endsWith('/a'));
    expect(copies).toHaveLength(1);
    expect(onH[copies[0]!]).toBe('m/a, v1\n+ edit on G\n');
    expect(await fsckFailures(world, [g, h])).toEqual([]);
  }, 300_000);

  it('an edit of a file the project deleted, where the project has a directory from elsewhere: kept as a conflict copy, and the directory comes to disk', async () => {
    const i = world.workstation('wsI');
    const j = world.workstation('wsJ');
    await i.start();
    await j.start();
    expect((await i.cli(['clone', world.url, world.projectId, i.dir])).code).toBe(0);
    expect((await j.cli(['clone', world.url, world.projectId, j.dir])).code).toBe(0);
    await writeFile(join(i.dir, 'n'), 'n, v1\n');
    await allInSync([i, j]);
    await waitFor('n on J', async () => ((await treeOf(j.dir))['n'] === 'n, v1\n' ? true : undefined), 60_000);
    const projectId = (await i.syncStatus())[0]!.projectId;
    await i.stop();
    // I's engine as after taking a directory `n` from elsewhere: its file `n` deleted, `n/x` there.
    const other = await openLocalEngine({ home: i.home });
    try {
      const actor = { id: 'other', kind: 'local', name: 'another process' } as const;
      await other.engine.deleteFile({ projectId, path: 'n', actor });
      await other.engine.writeFile({ projectId, path: 'n/x', actor, content: Buffer.from('n/x from elsewhere\n') });
    } finally {
      await other.close();
    }
    await appendFile(join(i.dir, 'n'), '+ edit on I\n');
    await i.start();
    await allInSync([i, j], 60);
    const [onI, onJ] = [await treeOf(i.dir), await treeOf(j.dir)];
    expect(onI).toEqual(onJ);
    expect(onJ['n/x']).toBe('n/x from elsewhere\n');
    const copies = Object.keys(onJ).filter((path) => path.startsWith('n (conflict wsI '));
    expect(copies).toHaveLength(1);
    expect(onJ[copies[0]!]).toBe('n, v1\n+ edit on I\n');
    expect(await fsckFailures(world, [i, j])).toEqual([]);
  }, 300_000);
});
