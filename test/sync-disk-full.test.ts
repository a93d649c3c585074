// A full disk on the receiving side (issue 38, item 3), real processes on loopback: B's directory is a
// 50 MiB tmpfs. After a 30 MiB file left 20 MiB free, two 15 MiB files from A were written side by
// side, both failed with ENOSPC, and both were retried together every round, failing forever (one of
// them fits) — while `sync status` said in sync. Now what fits is written (one at a time when side by
// side does not fit), the rest is tried again until there is room, `sync status` names the full
// disk and `sync wait` stops with it (exit 4); room again, everything arrives without a restart.
// Needs root (a tmpfs of its own).
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdir, readFile, rm, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSmallDiskPair, type SmallDiskPair } from './helpers/small-disk.js';
import { allInSync, openSyncWorld, reasonsOf, treeOf, waitFor, type Workstation } from './sync-harness.js';

const run = promisify(execFile);
const asRoot = process.getuid?.() === 0;
let a: Workstation;
let b: Workstation;
let pair: SmallDiskPair | undefined;

const MiB = 1024 * 1024;

beforeAll(async () => {
  if (!asRoot) return;
  pair = await openSmallDiskPair({
    prefix: 'strata-sync-disk-full-',
    size: '50m',
    label: 'strata-test-disk-full',
    seedA: (dir) => writeFile(join(dir, 'notes.txt'), 'notes\n'),
  });
  ({ a, b } = pair);
}, 240_000);

afterAll(() => pair?.close(), 60_000);

describe.skipIf(!asRoot)('a full disk on the receiving side', () => {
  it('writes what fits, retries the rest one at a time until there is room, and says so meanwhile', async () => {
    await writeFile(join(a.dir, 'big30.bin'), randomBytes(30 * MiB));
    await allInSync([a, b], 180);
    // Two 15 MiB files at once: 20 MiB free takes one of them. B is stopped meanwhile, so that both
    // come down in one pull and are written together, as they were when this failed forever.
    await b.stop();
    const one = randomBytes(15 * MiB);
    const two = randomBytes(15 * MiB);
    await Promise.all([writeFile(join(a.dir, 'one.bin'), one), writeFile(join(a.dir, 'two.bin'), two)]);
    await allInSync([a]);
    await b.start();
    const onDisk = async (name: string, bytes: Buffer) => (await readFile(join(b.dir, name)).catch(() => null))?.equals(bytes) === true;
    const stuck = await waitFor(
      'one of the two files on B, the other named as waiting for room',
      async () => {
        const [project] = await b.syncStatus();
        const full = reasonsOf(project).find((r) => r.code === 'WRITE_FAILED' && /disk full: 1 file waiting/.test(r.message));
        return full !== undefined && ((await onDisk('one.bin', one)) || (await onDisk('two.bin', two))) ? project : undefined;
      },
      120_000,
    );
    expect(stuck!.sync.inSync).toBe(false);
    const wait = await b.cli(['sync', 'wait', '--timeout', '60']);
    expect(wait.code, wait.stderr).toBe(4);
    expect(wait.stderr).toMatch(/disk full: 1 file waiting for room here/);
    // Room again (the 30 MiB file deleted on A): the other arrives, without a restart, in the round
    // that frees the room (not at its next retry).
    await rm(join(a.dir, 'big30.bin'));
    await waitFor('B to have both files', async () => ((await onDisk('one.bin', one)) && (await onDisk('two.bin', two))) || undefined, 60_000);
    await allInSync([a, b], 120);
    expect(await onDisk('one.bin', one)).toBe(true);
    expect(await onDisk('two.bin', two)).toBe(true);
    expect(await treeOf(b.dir)).toEqual(await treeOf(a.dir));
  }, 400_000);
});

describe.skipIf(!asRoot)('a full home on the receiving side (its store)', () => {
  it('stores what fits one at a time, says disk full meanwhile, and takes the rest once there is room', async () => {
    const w = await openSyncWorld('strata-sync-home-full-');
    const c = w.workstation('wsC');
    let homeMounted = false;
    try {
      const a2 = w.workstation('wsA');
      await mkdir(a2.dir, { recursive: true });
      await writeFile(join(a2.dir, 'notes.txt'), 'notes\n');
      await mkdir(c.home, { recursive: true });
      await run('mount', ['-t', 'tmpfs', '-o', 'size=96m', 'strata-test-home-full', c.home]);
      homeMounted = true;
      await a2.start();
      await c.start();
      expect((await a2.cli(['init', a2.dir, '--server', w.url, '--project', w.projectId])).code).toBe(0);
      expect((await c.cli(['clone', w.url, w.projectId, c.dir])).code).toBe(0);
      await allInSync([a2, c]);
      // Leave 30 MiB free on C's home: one 20 MiB file fits in its store, two do not.
      await c.stop();
      const fs = await statfs(c.home);
      const filler = join(c.home, 'filler');
      await writeFile(filler, Buffer.alloc(Math.max(0, fs.bavail * fs.bsize - 30 * MiB)));
      const one = randomBytes(20 * MiB);
      const two = randomBytes(20 * MiB);
      await Promise.all([writeFile(join(a2.dir, 'one.bin'), one), writeFile(join(a2.dir, 'two.bin'), two)]);
      await allInSync([a2]);
      await c.start();
      const stuck = await waitFor(
        "C's status to say its disk is full",
        async () => {
          const [project] = await c.syncStatus();
          return reasonsOf(project).some((r) => r.code === 'WRITE_FAILED' && /disk full: 1 file waiting/.test(r.message)) ? project : undefined;
        },
        120_000,
      );
      expect(stuck!.sync.inSync).toBe(false);
      const wait = await c.cli(['sync', 'wait', '--timeout', '60']);
      expect(wait.code, wait.stderr).toBe(4);
      expect(wait.stderr).toMatch(/disk full: 1 file waiting for room here/);
      // Room again on C's disk: the rest comes down within the 10 s retry, without a restart.
      await rm(filler);
      await waitFor('C to have both files', async () => ((await readFile(join(c.dir, 'two.bin')).catch(() => null))?.equals(two) && (await readFile(join(c.dir, 'one.bin')).catch(() => null))?.equals(one)) || undefined, 60_000);
      await allInSync([a2, c], 120);
      expect((await readFile(join(c.dir, 'one.bin'))).equals(one)).toBe(true);
      expect((await readFile(join(c.dir, 'two.bin'))).equals(two)).toBe(true);
    } finally {
      await c.stop().catch(() => undefined);
      if (homeMounted) await run('umount', ['-l', c.home]).catch(() => undefined);
      await w.dispose();
    }
  }, 400_000);
});

