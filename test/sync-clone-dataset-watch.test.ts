// A dataset cloned in watch mode (issue 38): the pulled bytes are written to the working-tree file
// from the copy the chunking thread kept as it stored them (kept-copies.ts), not read back from the
// pack. What must hold either way: the file is byte-identical, executable as versioned, has its
// version's time as mtime, the store keeps no copy once it is placed, and fsck is clean. Real
// processes on loopback: workstation A (watch mode) tracks `data/**` as datasets, B clones in watch mode.
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson } from './cli-harness.js';
import { allInSync, fsckFailures, openSyncWorld, type SyncWorld, type Workstation } from './sync-harness.js';

describe('a dataset cloned in watch mode', () => {
  let world: SyncWorld;
  let a: Workstation;
  let b: Workstation;
  let original: Buffer;

  beforeAll(async () => {
    world = await openSyncWorld('strata-sync-clone-dataset-');
    a = world.workstation('wsA');
    b = world.workstation('wsB');
    await mkdir(join(a.dir, 'data'), { recursive: true });
    await a.start();
    await b.start();
    const init = await a.cli(['init', a.dir, '--server', world.url, '--project', world.projectId]);
    expect(init.code, init.stderr).toBe(0);
    const track = await a.cli(['dataset', 'track', 'data/**'], { cwd: a.dir });
    expect(track.code, track.stderr).toBe(0);
    original = randomBytes(20 * 1024 * 1024 + 12_345);
    await writeFile(join(a.dir, 'data', 'run.bin'), original);
    await chmod(join(a.dir, 'data', 'run.bin'), 0o755);
    await allInSync([a]);
  }, 180_000);

  afterAll(async () => {
    await world?.dispose();
  }, 60_000);

  it('comes down byte-identical, executable, with its version time, no copy left in the store, fsck clean', async () => {
    const clone = await b.cli(['clone', world.url, world.projectId, b.dir]);
    expect(clone.code, clone.stderr).toBe(0);
    await allInSync([b, a]);
    const file = join(b.dir, 'data', 'run.bin');
    expect((await readFile(file)).equals(original)).toBe(true);
    const st = await stat(file);
    expect(st.mode & 0o111).not.toBe(0);
    expect(st.nlink).toBe(1);
    const history = await b.cli(['history', 'data/run.bin', '--json'], { cwd: b.dir });
    expect(history.code, history.stderr).toBe(0);
    const [head] = parseJson<{ items: Array<{ dataset?: boolean; timestamp: string }> }>(history).items;
    expect(head?.dataset).toBe(true);
    expect(Math.abs(st.mtimeMs - Date.parse(head!.timestamp))).toBeLessThan(2);
    expect(await readdir(join(b.home, 'store', 'tmp'))).toEqual([]);
    expect(await fsckFailures(world, [a, b])).toEqual([]);
  }, 180_000);
});
