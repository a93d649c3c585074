// Two workstations on one server where B's project lives on a small filesystem of its own (a tmpfs),
// for the full-disk tests of the receiving side. Needs root (mount). A is linked with what `seedA`
// puts in its directory, B is a clone of it, both in sync when this resolves.
import { execFile } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import { allInSync, openSyncWorld, type SyncWorld, type Workstation } from '../sync-harness.js';

const run = promisify(execFile);

export interface SmallDiskPair {
  world: SyncWorld;
  a: Workstation;
  b: Workstation;
  /** where the tmpfs is mounted */
  disk: string;
  /** B's project directory: the tmpfs itself, or a directory in it (room beside it for a filler) */
  bDir: string;
  /** stops B, unmounts the tmpfs and disposes of the world */
  close(): Promise<void>;
}

export async function openSmallDiskPair(options: { prefix: string; size: string; label: string; seedA(dir: string): Promise<void>; projectBelow?: string }): Promise<SmallDiskPair> {
  const world = await openSyncWorld(options.prefix);
  const a = world.workstation('wsA');
  const b = world.workstation('wsB');
  const disk = options.projectBelow === undefined ? b.dir : join(world.root, 'diskB');
  const bDir = options.projectBelow === undefined ? b.dir : join(disk, options.projectBelow);
  let mounted = false;
  const close = async () => {
    try {
      await b.stop();
    } finally {
      if (mounted) await run('umount', ['-l', disk]).catch(() => undefined);
      await world.dispose();
    }
  };
  try {
    await mkdir(a.dir, { recursive: true });
    await options.seedA(a.dir);
    await mkdir(disk, { recursive: true });
    await run('mount', ['-t', 'tmpfs', '-o', `size=${options.size}`, options.label, disk]);
    mounted = true;
    await a.start();
    await b.start();
    expect((await a.cli(['init', a.dir, '--server', world.url, '--project', world.projectId])).code).toBe(0);
    const clone = await b.cli(['clone', world.url, world.projectId, bDir]);
    expect(clone.code, clone.stderr).toBe(0);
    await allInSync([a, b]);
  } catch (error) {
    await close();
    throw error;
  }
  return { world, a, b, disk, bDir, close };
}
