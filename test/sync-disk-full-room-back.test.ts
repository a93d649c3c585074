// A full disk whose room came back is not a reason to stop waiting (the sync model's seed 44000 path
// 55): B's directory had no room for a pulled file, the user freed space on B's disk, and the
// `sync wait` run right after stopped with exit 4 "disk full: 1 file waiting for room here" — the
// round that looks at the room again (about a second later) brought the file down a moment after.
// Now the watch host counts as behind while room is back and the retry is due, and `sync wait`
// waits for it. Needs root (a tmpfs of its own).
import { randomBytes } from 'node:crypto';
import { readFile, rm, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSmallDiskPair, type SmallDiskPair } from './helpers/small-disk.js';
import { reasonsOf, waitFor } from './sync-harness.js';

const asRoot = process.getuid?.() === 0;
const MiB = 1024 * 1024;
let pair: SmallDiskPair | undefined;


beforeAll(async () => {
  if (!asRoot) return;
  pair = await openSmallDiskPair({
    prefix: 'strata-sync-room-back-',
    size: '40m',
    label: 'strata-test-room-back',
    seedA: (dir) => writeFile(join(dir, 'notes.txt'), 'notes\n'),
    projectBelow: 'project',
  });
}, 240_000);

afterAll(() => pair?.close(), 60_000);

describe.skipIf(!asRoot)('a full disk on the receiving side, then room again', () => {
  it('sync wait run right after the user frees space waits for the file instead of stopping on "disk full"', async () => {
    const { a, b, disk, bDir } = pair!;
    // A filler beside B's project leaves 4 MiB: the 10 MiB file from A does not fit.
    const fs = await statfs(disk);
    const filler = join(disk, 'filler');
    await writeFile(filler, Buffer.alloc(Math.max(0, fs.bavail * fs.bsize - 4 * MiB)));
    const big = randomBytes(10 * MiB);
    await writeFile(join(a.dir, 'big.bin'), big);
    await waitFor(
      "B's status to say its disk is full",
      async () => reasonsOf((await b.syncStatus())[0]).some((r) => r.code === 'WRITE_FAILED' && /disk full/.test(r.message)) || undefined,
      120_000,
    );
    const blocked = await b.cli(['sync', 'wait', '--timeout', '60']);
    expect(blocked.code, blocked.stderr).toBe(4);
    expect(blocked.stderr).toMatch(/disk full: 1 file waiting for room here/);

    await rm(filler);
    const wait = await b.cli(['sync', 'wait', '--timeout', '60']);
    expect(wait.code, wait.stderr).toBe(0);
    expect((await readFile(join(bDir, 'big.bin'))).equals(big)).toBe(true);
  }, 400_000);
});
