// What `strata status` and `strata sync status` say about a linked project (real processes on
// loopback): the same queue while the server is down or refuses the key, a conflict gone once its
// copy is deleted or renamed away (and still gone after a restart), the fix-it of a paused sync in
// both commands, and no stale "retrying at" once the sync works again.
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson } from './cli-harness.js';
import { allInSync, openSyncWorld, type SyncProject, type SyncWorld, treeOf, type Workstation, waitFor } from './sync-harness.js';

let world: SyncWorld;
let a: Workstation;
let b: Workstation;

interface StatusSync {
  state: string;
  queue: { versions: number };
  conflicts: Array<{ path: string }>;
  lastError: { message: string; retryAt: string | null } | null;
  pausedBecause?: string | null;
}

/** The project's sync as `strata status --json` has it (GET /v1/daemon/status). */
async function statusSync(ws: Workstation): Promise<StatusSync> {
  const result = await ws.cli(['status', '--json']);
  expect(result.code, result.stderr).toBe(0);
  const doc = parseJson<{ projects: Array<{ dir: string | null; sync?: StatusSync | null }> }>(result);
  const project = doc.projects.find((p) => p.dir === ws.dir);
  if (!project?.sync) throw new Error(`no synced project at ${ws.dir} in: ${result.stdout}`);
  return project.sync;
}

async function syncOf(ws: Workstation): Promise<SyncProject['sync'] & { pausedBecause?: string | null }> {
  const [project] = await ws.syncStatus();
  return project!.sync;
}

beforeAll(async () => {
  world = await openSyncWorld('strata-sync-status-');
  a = world.workstation('wsA');
  b = world.workstation('wsB');
  await mkdir(a.dir, { recursive: true });
  await writeFile(join(a.dir, 'race.txt'), 'base\n');
  await writeFile(join(a.dir, 'plot.txt'), 'base\n');
  await a.start();
  await b.start();
  const init = await a.cli(['init', a.dir, '--server', world.url, '--project', world.projectId]);
  expect(init.code, init.stderr).toBe(0);
  const clone = await b.cli(['clone', world.url, world.projectId, b.dir]);
  expect(clone.code, clone.stderr).toBe(0);
  await allInSync([a, b]);
}, 180_000);

afterAll(async () => {
  await world?.dispose();
}, 60_000);

describe('sync status', () => {
  it('a conflict goes from both statuses once its copy is deleted (here) or renamed away (elsewhere), and stays gone after a restart', async () => {
    await b.stop();
    await writeFile(join(a.dir, 'race.txt'), 'A wins\n');
    await writeFile(join(a.dir, 'plot.txt'), 'A wins\n');
    await allInSync([a]);
    await writeFile(join(b.dir, 'race.txt'), 'B offline\n');
    await writeFile(join(b.dir, 'plot.txt'), 'B offline\n');
    await b.start();
    await allInSync([a, b]);
    const copies = await waitFor(
      'both conflict copies on both workstations',
      async () => {
        const [ta, tb] = [await treeOf(a.dir), await treeOf(b.dir)];
        const found = Object.keys(tb).filter((path) => path.includes(' (conflict wsB '));
        return found.length === 2 && found.every((path) => ta[path] === 'B offline\n') ? found : undefined;
      },
      60_000,
    );
    expect((await syncOf(b)).conflicts.map((c) => c.path).sort()).toEqual([...copies].sort());
    expect((await statusSync(b)).conflicts).toHaveLength(2);
    const raceCopy = copies.find((path) => path.startsWith('race '))!;
    const plotCopy = copies.find((path) => path.startsWith('plot '))!;
    // Resolved here: the copy deleted on the workstation that made it. Resolved elsewhere: renamed
    // away on A, the rename pulled.
    await rm(join(b.dir, raceCopy));
    await rename(join(a.dir, plotCopy), join(a.dir, 'plot-B.txt'));
    await allInSync([a, b]);
    await waitFor('B to list no conflict', async () => ((await syncOf(b)).conflicts.length === 0 ? true : undefined), 30_000);
    expect((await statusSync(b)).conflicts).toEqual([]);
    const text = await b.cli(['status']);
    expect(text.stdout).not.toContain('conflict cop');
    expect((await b.cli(['sync', 'status'])).stdout).not.toContain('conflict:');
    // The list is kept in the home: a restart does not bring them back.
    await b.stop();
    await b.start();
    await allInSync([b]);
    expect((await syncOf(b)).conflicts).toEqual([]);
    expect((await statusSync(b)).conflicts).toEqual([]);
  }, 240_000);

  it('offline: `strata status` counts the queue as `strata sync status` does; the error and its retry time go once it syncs again', async () => {
    await world.stopServer();
    for (let i = 0; i < 3; i++) await writeFile(join(a.dir, `offline-${i}.txt`), `queued ${i}\n`);
    // `strata status` first and alone: `strata sync status` counting the queue must not be what fixes it.
    const offline = await waitFor(
      '`strata status` to show the 3 queued versions',
      async () => {
        const sync = await statusSync(a);
        return sync.state === 'offline' && sync.queue.versions >= 3 ? sync : undefined;
      },
      30_000,
    );
    expect(offline.queue.versions).toBe(3);
    const listed = await syncOf(a);
    expect(listed.queue.versions).toBe(offline.queue.versions);
    const offlineText = (await a.cli(['status'])).stdout;
    expect(offlineText).toContain('not in sync (offline), 3 versions queued');
    expect(offlineText).toMatch(/not in sync: 3 versions made here not on the server yet/);
    expect((await a.cli(['sync', 'status'])).stdout).toContain('retrying at');
    await world.startServer();
    await allInSync([a, b]);
    const idle = await syncOf(a);
    expect(idle.lastError).toBeNull();
    expect((await a.cli(['sync', 'status'])).stdout).not.toContain('retrying at');
  }, 240_000);

  it('a refused key: both commands show the queue and the fix-it, not just HTTP 401', async () => {
    const bad = `rk.dev.${'0'.repeat(26)}.${'x'.repeat(43)}`;
    const { saveServerKey } = await import('../daemon/sync/link.js');
    await saveServerKey(b.home, world.url, bad);
    await b.stop();
    await b.start();
    await writeFile(join(b.dir, 'while-paused.txt'), 'queued\n');
    const paused = await waitFor(
      '`strata status` to show the paused sync with its queue',
      async () => {
        const sync = await statusSync(b);
        return sync.state === 'paused' && sync.queue.versions >= 1 ? sync : undefined;
      },
      60_000,
    );
    expect(paused.queue.versions).toBe(1);
    expect((await syncOf(b)).queue.versions).toBe(1);
    const fixIt = 'run `strata init DIR --server URL --project ID` again';
    expect(paused.pausedBecause).toContain(fixIt);
    const syncText = await b.cli(['sync', 'status']);
    expect(syncText.stdout).toContain(fixIt);
    expect(syncText.stdout + syncText.stderr).not.toContain(bad);
    const statusText = await b.cli(['status']);
    expect(statusText.stdout).toContain('not in sync (paused), 1 version queued');
    expect(statusText.stdout).toContain(fixIt);
    // A good key again resumes it, and the fix-it goes.
    expect((await b.cli(['init', b.dir, '--server', world.url, '--project', world.projectId])).code).toBe(0);
    await allInSync([a, b]);
    const resumed = await syncOf(b);
    expect(resumed.pausedBecause ?? null).toBeNull();
    expect(resumed.lastError).toBeNull();
  }, 240_000);
});
