// A full disk, then `kill -9` (issue 38; the sync model's seed 39000, path 2:1): B's directory is a
// 16 MiB tmpfs that a filler file fills, and A changes `a/a` and adds `a/b`. B's engine takes both
// but neither fits on its disk; it waits for room, with the paths kept in memory while its cursor
// moves past them. B's daemon is killed -9, the filler removed, the daemon started again: nothing
// remembered the two paths, so B kept the old `a/a`, lacked `a/b`, and said in sync. Now a daemon's
// first look compares the whole project with what was versioned here, and until it has, it does not
// say in sync. Needs root (a tmpfs of its own).
import { mkdir, readdir, readFile, rm, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSmallDiskPair, type SmallDiskPair } from './helpers/small-disk.js';
import { allInSync, reasonsOf, treeOf, waitFor, type Workstation } from './sync-harness.js';

const asRoot = process.getuid?.() === 0;
let a: Workstation;
let b: Workstation;
let pair: SmallDiskPair | undefined;
/** B's disk: a tmpfs holding B's project directory and, beside it, the filler */
let disk: string;
let bDir: string;


beforeAll(async () => {
  if (!asRoot) return;
  pair = await openSmallDiskPair({
    prefix: 'strata-sync-disk-full-kill-',
    size: '16m',
    label: 'strata-test-disk-full-kill',
    projectBelow: 'thesis',
    seedA: async (dir) => {
      await mkdir(join(dir, 'a'), { recursive: true });
      await writeFile(join(dir, 'a', 'a'), 'old a/a.\n');
    },
  });
  ({ a, b, disk, bDir } = pair);
}, 240_000);

afterAll(() => pair?.close(), 60_000);

describe.skipIf(!asRoot)('a full disk, then kill -9', () => {
  it('brings what did not fit to disk after the restart, and does not say in sync before', async () => {
    expect(await readFile(join(bDir, 'a', 'a'), 'utf8')).toBe('old a/a.\n');
    // Every free byte of B's disk taken by files beside the project: one for the blocks, then a page
    // at a time until ENOSPC (tmpfs counts pages).
    const fs = await statfs(disk);
    await writeFile(join(disk, 'filler'), Buffer.alloc(fs.bavail * fs.bsize)).catch(() => undefined);
    for (let i = 0; i < 64; i++) {
      const written = await writeFile(join(disk, `filler-${i}`), Buffer.alloc(4096, 1)).then(
        () => true,
        (error: NodeJS.ErrnoException) => {
          if (error.code === 'ENOSPC') return false;
          throw error;
        },
      );
      if (!written) break;
    }
    await writeFile(join(a.dir, 'a', 'a'), 'v3\n');
    await writeFile(join(a.dir, 'a', 'b'), 'new a/b\n');
    await allInSync([a]);
    await waitFor(
      "B's status to say its disk is full",
      async () => {
        const [project] = await b.syncStatus();
        return reasonsOf(project).some((r) => r.code === 'WRITE_FAILED' && /disk full/.test(r.message)) || undefined;
      },
      120_000,
    );
    await b.kill();
    for (const name of await readdir(disk)) if (name.startsWith('filler')) await rm(join(disk, name), { force: true });
    await b.start();
    await allInSync([a, b]);
    expect(await readFile(join(bDir, 'a', 'a'), 'utf8')).toBe('v3\n');
    expect(await readFile(join(bDir, 'a', 'b'), 'utf8')).toBe('new a/b\n');
    expect(await treeOf(bDir)).toEqual(await treeOf(a.dir));
  }, 400_000);
});
