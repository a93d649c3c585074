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
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLocalEngine } from '../engine/local.js';
import { allInSync, fsckFailures, openSyncWorld, type SyncWorld, treeOf } from './sync-harness.js';

let world: SyncWorld;

beforeAll(async () => {
  world = await openSyncWorld('strata-sync-file-over-dir-');
}, 120_000);

afterAll(async () => {
  await world?.dispose();
}, 60_000);

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
    await allInSync([a, b]);
    const [onA, onB] = [await treeOf(a.dir), await treeOf(b.dir)];
    expect(onB).toEqual(onA);
    expect(onB['c/b']).toBe('from elsewhere\n');
    expect(onB['c']).toBeUndefined();
    const copies = Object.keys(onB).filter((path) => path.startsWith('c (conflict wsB '));
    expect(copies).toHaveLength(1);
    expect(onB[copies[0]!]).toBe('file c on B\n');
    expect(await fsckFailures(world, [a, b])).toEqual([]);
  }, 300_000);
});
