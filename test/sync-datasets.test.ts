// Datasets through sync (issue 14), real processes on loopback: workstation A (watch mode) tracks
// `data/**` as datasets; B is a clone with the project mounted (FUSE). A big file goes up as a
// manifest and its shards and comes down byte-identical; an edit in its middle sends only the
// shards it changed, both ways; the server and B record it as a dataset too.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { lstat, open, readFile, writeFile } from 'node:fs/promises';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson } from './cli-harness.js';
import { allInSync, fsckFailures, openSyncWorld, type SyncWorld, waitFor, type Workstation, SERVER_STORAGES } from './sync-harness.js';

// The same scenes against a server on its home (SQLite + directory) and on Postgres + S3.
for (const storage of SERVER_STORAGES) {
  describe(`server storage: ${storage}`, () => {
    const MiB = 1024 * 1024;
    const SIZE = 24 * MiB;

    let world: SyncWorld;
    let a: Workstation;
    let b: Workstation;
    let original: Buffer;

    interface Status {
      sync: { uploadedBytes: number; downloadedBytes: number };
    }

    async function bytesMoved(ws: Workstation): Promise<{ up: number; down: number }> {
      const [project] = (await ws.syncStatus()) as unknown as Status[];
      return { up: project!.sync.uploadedBytes, down: project!.sync.downloadedBytes };
    }

    async function unmount(dir: string): Promise<void> {
      await promisify(execFile)('fusermount3', ['-uz', dir], { timeout: 10_000 }).catch(() => undefined);
    }

    beforeAll(async () => {
      world = await openSyncWorld('strata-sync-datasets-', { storage });
      a = world.workstation('wsA');
      b = world.workstation('wsB');
      await mkdir(join(a.dir, 'data'), { recursive: true });
      await writeFile(join(a.dir, 'notes.txt'), 'runs\n');
      await a.start();
      await b.start();
      const init = await a.cli(['init', a.dir, '--server', world.url, '--project', world.projectId]);
      expect(init.code, init.stderr).toBe(0);
      const track = await a.cli(['dataset', 'track', 'data/**'], { cwd: a.dir });
      expect(track.code, track.stderr).toBe(0);
      original = randomBytes(SIZE);
      await writeFile(join(a.dir, 'data', 'run1.bin'), original);
      const clone = await b.cli(['clone', world.url, world.projectId, b.dir, '--mount']);
      expect(clone.code, clone.stderr).toBe(0);
    }, 180_000);

    afterAll(async () => {
      try {
        await world?.dispose();
      } finally {
        if (b !== undefined) await unmount(b.dir);
      }
    }, 60_000);

    async function history(ws: Workstation | null, path: string): Promise<Array<{ versionId: string; dataset?: boolean; size: number; timestamp: string }>> {
      const args = ['history', path, '--json'];
      const result = ws === null ? await world.serverCli([...args, '--project', world.projectId]) : await ws.cli(args, { cwd: ws.dir });
      expect(result.code, result.stderr).toBe(0);
      return parseJson<{ items: Array<{ versionId: string; dataset?: boolean; size: number; timestamp: string }> }>(result).items;
    }

    async function sameFileOnB(expected: Buffer): Promise<void> {
      await waitFor('B shows the dataset', async () => (await readFile(join(b.dir, 'data', 'run1.bin')).catch(() => null))?.equals(expected) || undefined, 60_000);
    }

    describe('datasets through sync', () => {
      it('a dataset goes up as manifest + shards and comes down byte-identical, recorded as a dataset everywhere', async () => {
        await waitFor('A captured the dataset', async () => (await history(a, 'data/run1.bin')).length === 1 || undefined, 60_000);
        await allInSync([a, b]);
        await sameFileOnB(original);
        const [onA] = await history(a, 'data/run1.bin');
        const [onServer] = await history(null, 'data/run1.bin');
        const [onB] = await history(b, 'data/run1.bin');
        expect(onA!.dataset).toBe(true);
        expect(onServer).toMatchObject({ versionId: onA!.versionId, dataset: true, size: SIZE });
        expect(onB).toMatchObject({ versionId: onA!.versionId, dataset: true, size: SIZE });
        expect(await readFile(join(b.dir, 'notes.txt'), 'utf8')).toBe('runs\n');
        // Brought to disk from B's store by a chunking thread: the version's time as mtime, like any pulled file.
        const made = Date.parse((await history(a, 'data/run1.bin'))[0]!.timestamp);
        const mtime = (await lstat(join(b.dir, 'data', 'run1.bin'))).mtimeMs;
        expect(Math.abs(mtime - made), `mtime ${new Date(mtime).toISOString()}, version ${new Date(made).toISOString()}`).toBeLessThan(2);
      }, 240_000);

      it('an edit in the middle sends only what changed: up as a delta of the changed shards, down those shards', async () => {
        const before = { a: await bytesMoved(a), b: await bytesMoved(b) };
        const patch = randomBytes(64 * 1024);
        const edited = Buffer.from(original);
        patch.copy(edited, 10 * MiB);
        // In place, as a tool that seeks and writes would: no new file.
        const handle = await open(join(a.dir, 'data', 'run1.bin'), 'r+');
        await handle.write(patch, 0, patch.length, 10 * MiB);
        await handle.close();
        await waitFor('A captured the edit', async () => (await history(a, 'data/run1.bin')).length === 2 || undefined, 60_000);
        await allInSync([a, b]);
        await sameFileOnB(edited);
        const after = { a: await bytesMoved(a), b: await bytesMoved(b) };
        const sent = after.a.up - before.a.up;
        const received = after.b.down - before.b.down;
        // Shards are 256 KiB–4 MiB (about 1 MiB): a 64 KiB edit touches one or two, plus the manifest.
        // Up, they go as deltas against the version before: about the 64 KiB that changed.
        expect(sent).toBeGreaterThan(64 * 1024);
        expect(sent).toBeLessThan(256 * 1024);
        expect(received).toBeGreaterThan(0);
        expect(received).toBeLessThan(9 * MiB);
        expect((await history(null, 'data/run1.bin')).map((v) => v.versionId)).toEqual((await history(a, 'data/run1.bin')).map((v) => v.versionId));
      }, 240_000);

      it('fsck is clean on all three homes', async () => {
        expect(await fsckFailures(world, [a, b])).toEqual([]);
      }, 120_000);
    });
  });
}
