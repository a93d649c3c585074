// A home on ext4 of 1 KiB blocks (mkfs's default below 512 MiB: a loop image, a small partition).
// SQLite grows a WAL database's -shm file by writing one byte per 4 KiB page and then stores into the
// whole page through a memory map: three blocks of each page were holes, and SQLite's first store into
// one on a full disk (walIndexAppend, at the first commit after a start) killed the daemon with SIGBUS
// (exit 135) under a mount that `tar x` was filling. Each database the daemon opens now has every
// block of what SQLite maps. Needs root (mkfs.ext4 and a loop mount).

import { statSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDaemonState } from '../daemon/state.js';
import { PackObjects } from '../engine/storage/local-content-store-pack.js';
import { openSqliteRepository } from '../engine/storage/sqlite-repository.js';
import { sh } from './mount-harness.js';

const asRoot = process.getuid?.() === 0;
let root: string;
let home: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'strata-wal-index-'));
  home = join(root, 'home');
  await mkdir(home);
  if (!asRoot) return;
  const image = join(root, 'home.img');
  await sh('truncate', ['-s', '32M', image]);
  await sh('mkfs.ext4', ['-q', '-F', '-b', '1024', image]);
  await sh('mount', ['-o', 'loop', image, home]);
});

afterAll(async () => {
  if (asRoot) await sh('umount', ['-l', home], { allowFail: true });
  await rm(root, { recursive: true, force: true });
});

/** Bytes of `file` that are holes: what a store through SQLite's map must allocate first. */
function holes(file: string): number {
  const { size, blocks } = statSync(file);
  return Math.max(0, size - blocks * 512);
}

describe.skipIf(!asRoot)('the wal-index of a home on 1 KiB blocks', () => {
  it('has all its blocks once the object pack, the metadata and the daemon state are open', async () => {
    const pack = join(home, 'packed.sqlite');
    // A first run leaves the databases; the next start is the one whose -shm SQLite truncates and grows.
    await PackObjects.open(pack, { now: () => 1 }).close();
    await openSqliteRepository({ file: join(home, 'metadata.sqlite') }).close();
    openDaemonState(join(home, 'state.sqlite')).close();

    const objects = PackObjects.open(pack, { now: () => 1 });
    const metadata = openSqliteRepository({ file: join(home, 'metadata.sqlite') });
    const state = openDaemonState(join(home, 'state.sqlite'));
    try {
      for (const file of [pack, join(home, 'metadata.sqlite'), join(home, 'state.sqlite')]) {
        expect(statSync(`${file}-shm`).size, file).toBeGreaterThanOrEqual(32 * 1024);
        expect(holes(`${file}-shm`), file).toBe(0);
      }
    } finally {
      await objects.close();
      await metadata.close();
      state.close();
    }
  });
});
