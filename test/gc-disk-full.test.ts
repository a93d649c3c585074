// gc on a full home (the disk filled under a simulation's results): it is the user's one way to free
// space inside Strata, and it needed free space itself. Deleting an object writes to the pack index
// first, and SQLite needs room for its log, so `strata gc` exited 1 with "Writing the object pack
// failed: database or disk is full" and freed nothing. The store keeps a reserve that collection
// releases on a full disk. Needs root (a tmpfs of its own for the home).

import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, stat, statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalEngine, openLocalEngine } from '../engine/local.js';
import { RESERVE_BYTES } from '../engine/storage/local-content-store-reserve.js';
import { sh } from './daemon-harness.js';
import { alice } from './helpers/world.js';

const asRoot = process.getuid?.() === 0;
let root: string;
let home: string;
let local: LocalEngine | null = null;
const mounted: string[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'strata-gc-full-'));
});

afterAll(async () => {
  await local?.close();
  for (const dir of mounted) await sh('umount', ['-l', dir], { allowFail: true });
  await rm(root, { recursive: true, force: true });
});

/** A home on a 48 MiB tmpfs of its own. */
async function openHome(name: string, options: { existing?: boolean } = {}): Promise<LocalEngine> {
  home = join(root, name);
  if (!options.existing) {
    await mkdir(home);
    await sh('mount', ['-t', 'tmpfs', '-o', 'size=48m', `strata-test-gc-${name}`, home]);
    mounted.push(home);
  }
  local = await openLocalEngine({ home, gcGraceMs: 0 });
  return local;
}

async function freeBytes(): Promise<number> {
  const fs = await statfs(home);
  return fs.bavail * fs.bsize;
}

async function fill(): Promise<void> {
  await sh('dd', ['if=/dev/zero', `of=${join(home, 'filler')}`, 'bs=1M'], { allowFail: true, timeoutMs: 30_000 });
  expect(await freeBytes()).toBeLessThan(64 * 1024);
}

describe.skipIf(!asRoot)('gc on a full home', () => {
  it('deletes what nothing references, says what it kept for the grace period, and makes its reserve again', async () => {
    const local = await openHome('gc');
    const store = local.store;
    expect((await stat(join(home, 'store', 'reserve'))).size).toBe(RESERVE_BYTES);
    // Small objects (in the SQLite pack, listed first) and large ones (a file each) nobody references.
    for (let i = 0; i < 50; i++) await store.putBuffer(randomBytes(1000));
    for (let i = 0; i < 10; i++) await store.putBuffer(randomBytes(1 << 20));
    await fill();

    const young = await local.engine.gc({ graceMs: 60 * 60_000 });
    expect(young).toMatchObject({ objectsDeleted: 0, objectsKept: 60, bytesKept: 50 * 1000 + 10 * (1 << 20), graceMs: 60 * 60_000 });

    const before = await freeBytes();
    const report = await local.engine.gc();
    expect(report).toMatchObject({ objectsScanned: 60, objectsDeleted: 60, objectsKept: 0 });
    expect(await freeBytes()).toBeGreaterThan(before + 8 * (1 << 20));
    expect((await local.engine.fsck()).ok).toBe(true);

    // Closed and opened again on the full disk (a restart, `strata gc --home`): SQLite could not even
    // create its shared-memory file.
    await local.close();
    await sh('dd', ['if=/dev/zero', `of=${join(home, 'filler2')}`, 'bs=1M'], { allowFail: true, timeoutMs: 30_000 });
    expect(await freeBytes()).toBeLessThan(64 * 1024);
    const again = await openHome('gc', { existing: true });
    expect((await again.engine.fsck()).ok).toBe(true);

    // Room again: the reserve is back for the next time the disk fills.
    await rm(join(home, 'filler'));
    await rm(join(home, 'filler2'));
    await again.engine.gc();
    expect((await stat(join(home, 'store', 'reserve'))).size).toBe(RESERVE_BYTES);
  }, 60_000);

  it('retention on a full disk collects the content it pruned', async () => {
    await local?.close();
    const engine = await openHome('retention');
    const orgId = 'org-test';
    await engine.repository.access.createOrganization({ orgId, name: 'Test org', createdAt: new Date().toISOString() });
    const { projectId } = await engine.engine.createProject({ orgId, name: 'thesis' });
    const written = [];
    for (let i = 0; i < 6; i++) {
      written.push(await engine.engine.writeFile({ projectId, path: 'results.m', actor: alice, content: randomBytes(2 << 20) }));
    }
    await engine.engine.settle();
    // The metadata log checkpointed and cut back (as SQLite does at a quiet moment): the setting's and
    // the pruning's writes have to grow it.
    const metadata = new Database(join(home, 'metadata.sqlite'));
    expect(metadata.pragma('wal_checkpoint(TRUNCATE)', { simple: true })).toBe(0);
    metadata.close();
    await fill();
    await engine.engine.setRetention({ projectId, maxVersions: 1, actor: alice });
    await engine.engine.settle();
    for (const w of written.slice(0, 5)) expect(await engine.store.has(w.version.contentHash!)).toBe(false);
    expect(await engine.store.has(written[5]!.version.contentHash!)).toBe(true);
    expect((await engine.engine.fsck()).ok).toBe(true);
  }, 60_000);
});
