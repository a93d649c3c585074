// Sync end to end (issue 14), all real processes on loopback: a `strata serve`, two workstations
// each with its own home, directory and `strata daemon`, linked with `strata init --server` and
// `strata clone`, driven by writing files the way tools do. After each scene both trees are equal,
// histories are complete on the server, and `strata fsck` is clean on every home.
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson } from './cli-harness.js';
import { allInSync, fsckFailures, openSyncWorld, type SyncWorld, treeOf, type Workstation, waitFor, SERVER_STORAGES } from './sync-harness.js';

// The same scenes against a server on its home (SQLite + directory) and on Postgres + S3.
for (const storage of SERVER_STORAGES) {
  describe(`server storage: ${storage}`, () => {
    let world: SyncWorld;
    let a: Workstation;
    let b: Workstation;

    beforeAll(async () => {
      // Every file counts towards the delete guard (the trees here are minutes old: young files do not).
      world = await openSyncWorld('strata-sync-', { storage, workstationEnv: { STRATA_GUARD_YOUNG_MS: '0' } });
      a = world.workstation('wsA');
      b = world.workstation('wsB');
      // A directory with files before it is linked: they go up. B is a clone: they come down.
      await mkdir(join(a.dir, 'src'), { recursive: true });
      await writeFile(join(a.dir, 'fit.m'), 'function y = fit(x)\n  y = x;\nend\n');
      await writeFile(join(a.dir, 'src', 'model.py'), 'print("model")\n');
      await a.start();
      await b.start();
      const init = await a.cli(['init', a.dir, '--server', world.url, '--project', world.projectId]);
      expect(init.code, init.stderr).toBe(0);
      expect(init.stdout).toContain(`linked to ${world.url}`);
      const clone = await b.cli(['clone', world.url, world.projectId, b.dir]);
      expect(clone.code, clone.stderr).toBe(0);
    }, 120_000);

    afterAll(async () => {
      await world?.dispose();
    }, 60_000);

    async function sameTrees(): Promise<Record<string, string>> {
      await allInSync([a, b]);
      let last: [Record<string, string>, Record<string, string>] = [{}, {}];
      try {
        return await waitFor(
          'both trees equal',
          async () => {
            last = [await treeOf(a.dir), await treeOf(b.dir)];
            return JSON.stringify(last[0]) === JSON.stringify(last[1]) ? last[0] : undefined;
          },
          30_000,
        );
      } catch (error) {
        throw new Error(`${(error as Error).message}\nA: ${JSON.stringify(last[0])}\nB: ${JSON.stringify(last[1])}`);
      }
    }

    async function serverHistory(path: string): Promise<Array<{ versionId: string; kind: string; timestamp: string }>> {
      const result = await world.serverCli(['history', path, '--project', world.projectId, '--json']);
      expect(result.code, result.stderr).toBe(0);
      return parseJson<{ items: Array<{ versionId: string; kind: string; timestamp: string }> }>(result).items;
    }

    async function localHistory(ws: Workstation, path: string): Promise<string[]> {
      const result = await ws.cli(['history', path, '--json'], { cwd: ws.dir });
      expect(result.code, result.stderr).toBe(0);
      return parseJson<{ items: Array<{ versionId: string }> }>(result).items.map((v) => v.versionId);
    }

    describe('two workstations and a server', () => {
      it('a linked directory goes up, a clone comes down, and edits, deletes and renames travel both ways', async () => {
        expect(await sameTrees()).toEqual({ 'fit.m': 'function y = fit(x)\n  y = x;\nend\n', 'src/model.py': 'print("model")\n' });

        await writeFile(join(b.dir, 'notes.md'), '# from B\n');
        await writeFile(join(a.dir, 'fit.m'), 'function y = fit(x)\n  y = 2 * x;\nend\n');
        await rename(join(a.dir, 'src', 'model.py'), join(a.dir, 'src', 'model2.py'));
        const tree = await sameTrees();
        expect(Object.keys(tree)).toEqual(['fit.m', 'notes.md', 'src/model2.py']);
        expect(tree['fit.m']).toContain('2 * x');

        await rm(join(b.dir, 'notes.md'));
        expect(Object.keys(await sameTrees())).toEqual(['fit.m', 'src/model2.py']);

        // Every version made on either side is on the server, in order, with its original id.
        const onServer = await serverHistory('fit.m');
        expect(onServer.map((v) => v.versionId)).toEqual(await localHistory(a, 'fit.m'));
        expect(onServer.map((v) => v.versionId)).toEqual(await localHistory(b, 'fit.m'));
        expect(onServer).toHaveLength(2);
      }, 180_000);

      it('an edit on each side from the same base keeps both: the second is a conflict copy everywhere', async () => {
        await b.stop();
        await writeFile(join(a.dir, 'fit.m'), 'A wins the race\n');
        await allInSync([a]);
        await writeFile(join(b.dir, 'fit.m'), 'B edited offline\n');
        await b.start();
        const tree = await sameTrees();
        expect(tree['fit.m']).toBe('A wins the race\n');
        const copies = Object.keys(tree).filter((path) => path.startsWith('fit (conflict wsB '));
        expect(copies).toHaveLength(1);
        expect(tree[copies[0]!]).toBe('B edited offline\n');
        const [status] = await b.syncStatus();
        expect(status!.sync.conflicts.map((c) => [c.path, c.of])).toEqual([[copies[0], 'fit.m']]);
        // Resolving is ordinary: delete the copy (or keep it); it stays in history either way.
        await rm(join(a.dir, copies[0]!));
        expect(Object.keys(await sameTrees())).toEqual(['fit.m', 'src/model2.py']);
      }, 180_000);

      it('two saves made offline against an edit made elsewhere: one conflict copy holding the last save, everywhere', async () => {
        await b.stop();
        await writeFile(join(a.dir, 'fit.m'), 'A edits while B is away\n');
        await allInSync([a]);
        await world.stopServer();
        await b.start();
        const saved = async (text: string) => {
          await writeFile(join(b.dir, 'fit.m'), text);
          await waitFor(`B to version "${text.trim()}"`, async () => ((await b.syncStatus())[0]!.sync.queue.versions >= 1 ? true : undefined), 30_000);
        };
        await saved('B offline save 1\n');
        const before = (await b.syncStatus())[0]!.sync.queue.versions;
        await writeFile(join(b.dir, 'fit.m'), 'B offline save 2\n');
        await waitFor('B to version the second save', async () => ((await b.syncStatus())[0]!.sync.queue.versions > before ? true : undefined), 30_000);
        await world.startServer();
        const tree = await sameTrees();
        expect(tree['fit.m']).toBe('A edits while B is away\n');
        // One copy (a stale copy of the first save was made beside it before), with the last save.
        const copies = Object.keys(tree).filter((path) => path.startsWith('fit (conflict wsB '));
        expect(copies).toHaveLength(1);
        expect(tree[copies[0]!]).toBe('B offline save 2\n');
        // both saves are versions of that one copy (a partial write captured between them may be a third)
        expect((await serverHistory(copies[0]!)).length).toBeGreaterThanOrEqual(2);
        await rm(join(a.dir, copies[0]!));
        expect(Object.keys(await sameTrees())).toEqual(['fit.m', 'src/model2.py']);
      }, 240_000);

      it('a deletion against an edit keeps the edit, on both sides', async () => {
        await b.stop();
        await writeFile(join(a.dir, 'src', 'model2.py'), 'print("edited on A")\n');
        await allInSync([a]);
        await rm(join(b.dir, 'src', 'model2.py'));
        await b.start();
        const tree = await sameTrees();
        expect(tree['src/model2.py']).toBe('print("edited on A")\n');
      }, 180_000);

      it('1,000 writes made while the server is down are queued, survive a daemon restart, and drain when it is back', async () => {
        await world.stopServer();
        await mkdir(join(a.dir, 'batch'), { recursive: true });
        for (let i = 0; i < 1000; i++) await writeFile(join(a.dir, 'batch', `f${String(i).padStart(4, '0')}.txt`), `file ${i}\n`);
        const queued = await waitFor(
          'A to queue the 1,000 writes',
          async () => {
            const [project] = await a.syncStatus();
            return project!.sync.queue.versions >= 1000 ? project! : undefined;
          },
          60_000,
        );
        expect(queued.sync.state).toBe('offline');
        expect(queued.sync.lastError?.message).toMatch(/unreachable/);
        expect(queued.sync.queue.versions).toBe(1000);
        // The queue is the engine's own records: a restart loses nothing.
        await a.stop();
        await a.start();
        const wait = await a.cli(['sync', 'wait', '--timeout', '1', '--json']);
        expect(wait.code).toBe(7);
        await world.startServer();
        const tree = await sameTrees();
        expect(Object.keys(tree).filter((path) => path.startsWith('batch/'))).toHaveLength(1000);
      }, 240_000);

      it('kill -9 of a daemon mid-drain and of the server mid-upload lose nothing and duplicate nothing', async () => {
        await b.stop();
        for (let round = 0; round < 3; round++) {
          for (let i = 0; i < 200; i++) await writeFile(join(a.dir, 'batch', `k${round}-${i}.txt`), `round ${round} file ${i}\n`);
          // Let A start pushing, then kill it (and, in one round, the server) without warning.
          await waitFor('A to push something', async () => ((await a.syncStatus())[0]!.sync.pushed > 0 ? true : undefined), 30_000);
          await a.kill();
          if (round === 1) {
            await world.stopServer('SIGKILL');
            await world.startServer();
          }
          await a.start();
        }
        await b.start();
        const tree = await sameTrees();
        expect(Object.keys(tree).filter((path) => path.startsWith('batch/k'))).toHaveLength(600);
        // Exactly once in effect: one version per file on the server, however often it was sent.
        expect(await serverHistory('batch/k1-7.txt')).toHaveLength(1);
      }, 300_000);

      it('a change set deleting most of the project is held on the other workstation until confirmed', async () => {
        await rm(join(a.dir, 'batch'), { recursive: true });
        // A's own guard trips first (most of its files vanished at once); the user meant it.
        await waitFor('A to hold its deletions', async () => {
          const result = await a.cli(['status', '--json']);
          return (parseJson<{ projects: Array<{ massDeleteGuard: { tripped: boolean } }> }>(result).projects[0]?.massDeleteGuard.tripped ?? false) || undefined;
        });
        const reset = await a.cli(['guard', 'reset'], { cwd: a.dir });
        expect(reset.code, reset.stderr).toBe(0);
        await allInSync([a]);
        const held = await waitFor(
          'B to hold the incoming deletions',
          async () => {
            const [project] = await b.syncStatus();
            return project!.sync.held !== null ? project! : undefined;
          },
          60_000,
        );
        expect(held.sync.state).toBe('held');
        // What is held is still on B's disk. (Deletions A recorded before its own guard tripped are
        // ordinary ones and reach B as such: on a loaded machine its watcher sees the rm in several
        // batches, and which files go first is rm's order, so no particular file can be named here.)
        // `deletes` counts the held change set only; ordinary deletions applied just before it, which
        // counted towards holding it, are `recent` (it used to fold them into `deletes`, and the status
        // said "nothing was deleted here").
        const left = (await readdir(join(b.dir, 'batch'))).length;
        expect(left).toBeGreaterThan(0);
        expect(left).toBeGreaterThanOrEqual(held.sync.held!.deletes);
        const status = await b.cli(['sync', 'status']);
        expect(status.stdout).toContain('strata sync confirm');
        const wait = await b.cli(['sync', 'wait', '--timeout', '30']);
        expect(wait.code).toBe(4);
        const confirm = await b.cli(['sync', 'confirm', '--project', held.projectId]);
        expect(confirm.code, confirm.stderr).toBe(0);
        expect(Object.keys(await sameTrees())).toEqual(['fit.m', 'src/model2.py']);
      }, 240_000);

      it('fsck is clean on all three homes', async () => {
        expect(await fsckFailures(world, [a, b])).toEqual([]);
      }, 120_000);
    });
  });
}
