// Snapshots through sync (issue 14), real processes on loopback: a snapshot taken on one workstation
// reaches the server's chain and the other workstation with its id, message and pins; snapshots taken
// on both while the server is down land, both of them, as a linear chain on the server, each pinning
// its own workstation's tree; a restore of the other workstation's snapshot brings back its files.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson } from './cli-harness.js';
import { allInSync, fsckFailures, openSyncWorld, type SyncWorld, treeOf, waitFor, type Workstation } from './sync-harness.js';

let world: SyncWorld;
let a: Workstation;
let b: Workstation;

interface Snapshot {
  snapshotId: string;
  parentId: string | null;
  seq: number;
  message: string;
  timestamp: string;
}
interface Entry {
  path: string;
  versionId: string;
}

beforeAll(async () => {
  world = await openSyncWorld('strata-sync-snapshots-');
  a = world.workstation('wsA');
  b = world.workstation('wsB');
  await mkdir(a.dir, { recursive: true });
  await writeFile(join(a.dir, 'fit.m'), 'fit v1\n');
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

async function snapshots(ws: Workstation | null): Promise<Snapshot[]> {
  const result = ws === null ? await world.serverCli(['snapshot', 'list', '--all', '--json', '--project', world.projectId]) : await ws.cli(['snapshot', 'list', '--all', '--json'], { cwd: ws.dir });
  expect(result.code, result.stderr).toBe(0);
  return parseJson<{ items: Snapshot[] }>(result).items;
}

async function pins(ws: Workstation | null, snapshotId: string): Promise<Entry[]> {
  const args = ['snapshot', 'show', snapshotId, '--json'];
  const result = ws === null ? await world.serverCli([...args, '--project', world.projectId]) : await ws.cli(args, { cwd: ws.dir });
  expect(result.code, result.stderr).toBe(0);
  return parseJson<{ entries: Entry[] }>(result).entries.map(({ path, versionId }) => ({ path, versionId }));
}

async function snapshot(ws: Workstation, message: string): Promise<string> {
  const result = await ws.cli(['snapshot', 'create', '-m', message, '--json'], { cwd: ws.dir });
  expect(result.code, result.stderr).toBe(0);
  return parseJson<{ snapshotId: string }>(result).snapshotId;
}

describe('snapshots through sync', () => {
  it('a snapshot taken on A is on the server and on B with its id, message and pins', async () => {
    const id = await snapshot(a, 'first fit');
    await allInSync([a, b]);
    const onServer = await waitFor('the snapshot on the server', async () => (await snapshots(null)).find((s) => s.snapshotId === id), 30_000);
    expect(onServer.message).toBe('first fit');
    const onB = await waitFor('the snapshot on B', async () => (await snapshots(b)).find((s) => s.snapshotId === id), 30_000);
    expect(onB.timestamp).toBe(onServer.timestamp);
    const pinsOnA = await pins(a, id);
    expect(pinsOnA.map((p) => p.path)).toEqual(['fit.m']);
    expect(await pins(null, id)).toEqual(pinsOnA);
    expect(await pins(b, id)).toEqual(pinsOnA);
  }, 120_000);

  it('tags travel both ways: added on A, removed on B', async () => {
    const [first] = (await snapshots(a)).filter((s) => s.message === 'first fit');
    const add = await a.cli(['tag', 'add', first!.snapshotId, 'submitted'], { cwd: a.dir });
    expect(add.code, add.stderr).toBe(0);
    const tagsOf = async (ws: Workstation | null) => {
      const result = ws === null ? await world.serverCli(['tag', 'list', '--json', '--project', world.projectId]) : await ws.cli(['tag', 'list', '--json'], { cwd: ws.dir });
      expect(result.code, result.stderr).toBe(0);
      return parseJson<{ items: Array<{ tag: string; snapshotId: string }> }>(result).items;
    };
    const tagged = [{ tag: 'submitted', snapshotId: first!.snapshotId }];
    await waitFor('the tag on the server', async () => (JSON.stringify(await tagsOf(null)) === JSON.stringify(tagged) ? true : undefined), 60_000);
    await waitFor('the tag on B', async () => (JSON.stringify(await tagsOf(b)) === JSON.stringify(tagged) ? true : undefined), 60_000);
    const remove = await b.cli(['tag', 'rm', 'submitted'], { cwd: b.dir });
    expect(remove.code, remove.stderr).toBe(0);
    await waitFor('the tag gone from the server', async () => ((await tagsOf(null)).length === 0 ? true : undefined), 60_000);
    await waitFor('the tag gone from A', async () => ((await tagsOf(a)).length === 0 ? true : undefined), 60_000);
  }, 180_000);

  it('the retention setting travels both ways, and each side prunes to it', async () => {
    const retentionOf = async (ws: Workstation | null) => {
      const result = ws === null ? await world.serverCli(['retention', 'get', '--json', '--project', world.projectId]) : await ws.cli(['retention', 'get', '--json'], { cwd: ws.dir });
      expect(result.code, result.stderr).toBe(0);
      return parseJson<{ maxVersions: number }>(result).maxVersions;
    };
    const historyOf = async (ws: Workstation | null, path: string) => {
      const args = ['history', path, '--all', '--json'];
      const result = ws === null ? await world.serverCli([...args, '--project', world.projectId]) : await ws.cli(args, { cwd: ws.dir });
      expect(result.code, result.stderr).toBe(0);
      return parseJson<{ items: Array<{ versionId: string }> }>(result).items;
    };
    const set = await a.cli(['retention', 'set', '3'], { cwd: a.dir });
    expect(set.code, set.stderr).toBe(0);
    await waitFor('3 on the server', async () => ((await retentionOf(null)) === 3 ? true : undefined), 60_000);
    await waitFor('3 on B', async () => ((await retentionOf(b)) === 3 ? true : undefined), 60_000);
    // Six saves on A, each captured before the next: every side keeps the last three.
    for (let i = 1; i <= 6; i++) {
      await writeFile(join(a.dir, 'kept.txt'), `save ${i}\n`);
      await waitFor(`save ${i} captured on A`, async () => ((await a.cli(['cat', 'kept.txt'], { cwd: a.dir })).stdout === `save ${i}\n` ? true : undefined), 30_000);
    }
    await allInSync([a, b]);
    expect(await readFile(join(b.dir, 'kept.txt'), 'utf8')).toBe('save 6\n');
    for (const ws of [a, null, b]) {
      await waitFor(`three versions of kept.txt on ${ws?.name ?? 'the server'}`, async () => ((await historyOf(ws, 'kept.txt')).length === 3 ? true : undefined), 60_000);
    }
    // Changed on the server (an admin): both workstations take it.
    const onServer = await world.serverCli(['retention', 'set', '0', '--project', world.projectId]);
    expect(onServer.code, onServer.stderr).toBe(0);
    await waitFor('unlimited on A', async () => ((await retentionOf(a)) === 0 ? true : undefined), 60_000);
    await waitFor('unlimited on B', async () => ((await retentionOf(b)) === 0 ? true : undefined), 60_000);
    await rm(join(a.dir, 'kept.txt'));
    await allInSync([a, b]);
    await waitFor('kept.txt gone from B', async () => ((await treeOf(b.dir))['kept.txt'] === undefined ? true : undefined), 60_000);
  }, 240_000);

  it("a member's workstation (no manage right) keeps its own retention, says so, and still syncs", async () => {
    const key = await world.serverCli(['keys', 'create', '--purpose', 'member workstation', '--role', 'member', '--json']);
    expect(key.code, key.stderr).toBe(0);
    const m = world.workstation('wsM');
    m.env['STRATA_API_KEY'] = parseJson<{ apiKey: string }>(key).apiKey;
    await m.start();
    try {
      const clone = await m.cli(['clone', world.url, world.projectId, m.dir]);
      expect(clone.code, clone.stderr).toBe(0);
      await allInSync([a, b, m]);
      expect((await m.cli(['retention', 'set', '7'], { cwd: m.dir })).code).toBe(0);
      await waitFor('the refusal in M’s log', async () => (m.daemonLog().includes('applies here only') ? true : undefined), 60_000);
      await writeFile(join(m.dir, 'from-m.txt'), 'member edit\n');
      await allInSync([a, b, m]);
      await waitFor('M’s file on A', async () => ((await treeOf(a.dir))['from-m.txt'] === 'member edit\n' ? true : undefined), 60_000);
      const get = async (ws: Workstation | null) =>
        parseJson<{ maxVersions: number }>(ws === null ? await world.serverCli(['retention', 'get', '--json', '--project', world.projectId]) : await ws.cli(['retention', 'get', '--json'], { cwd: ws.dir })).maxVersions;
      expect([await get(m), await get(null), await get(a)]).toEqual([7, 0, 0]);
      expect(m.daemonLog().match(/applies here only/g)).toHaveLength(1);
      await rm(join(m.dir, 'from-m.txt'));
      await allInSync([a, b, m]);
    } finally {
      await m.stop();
    }
  }, 240_000);

  it('snapshots taken on both sides while the server is down both land, in one linear chain, each with its own tree', async () => {
    await world.stopServer();
    await writeFile(join(a.dir, 'a-only.txt'), 'made on A offline\n');
    await writeFile(join(b.dir, 'b-only.txt'), 'made on B offline\n');
    await waitFor('A captured its file', async () => (await a.cli(['history', 'a-only.txt', '--json'], { cwd: a.dir })).code === 0 || undefined, 30_000);
    await waitFor('B captured its file', async () => (await b.cli(['history', 'b-only.txt', '--json'], { cwd: b.dir })).code === 0 || undefined, 30_000);
    const fromA = await snapshot(a, 'offline on A');
    const fromB = await snapshot(b, 'offline on B');
    await world.startServer();
    await allInSync([a, b]);
    await waitFor('both snapshots on the server', async () => {
      const ids = (await snapshots(null)).map((s) => s.snapshotId);
      return ids.includes(fromA) && ids.includes(fromB) ? true : undefined;
    }, 60_000);
    // One chain: each snapshot's parent is the one before it.
    const chain = (await snapshots(null)).sort((x, y) => x.seq - y.seq);
    for (let i = 1; i < chain.length; i++) expect(chain[i]!.parentId).toBe(chain[i - 1]!.snapshotId);
    // Each pins its own workstation's tree as it was, not the merged one.
    expect((await pins(null, fromA)).map((p) => p.path)).toEqual(['a-only.txt', 'fit.m']);
    expect((await pins(null, fromB)).map((p) => p.path)).toEqual(['b-only.txt', 'fit.m']);
    expect(await pins(null, fromA)).toEqual(await pins(a, fromA));
    // And each workstation has the other's.
    await waitFor('B has A\'s offline snapshot', async () => (await snapshots(b)).some((s) => s.snapshotId === fromA) || undefined, 30_000);
    await waitFor('A has B\'s offline snapshot', async () => (await snapshots(a)).some((s) => s.snapshotId === fromB) || undefined, 30_000);
    expect(await pins(b, fromA)).toEqual(await pins(a, fromA));
    expect(Object.keys(await treeOf(a.dir))).toEqual(['a-only.txt', 'b-only.txt', 'fit.m']);

    // Restoring A's offline snapshot on B brings B's tree to it (b-only.txt goes; history keeps it).
    const restore = await b.cli(['snapshot', 'restore', fromA, '--json'], { cwd: b.dir });
    expect(restore.code, restore.stderr).toBe(0);
    await allInSync([a, b]);
    await waitFor('A follows the restore', async () => (JSON.stringify(Object.keys(await treeOf(a.dir))) === '["a-only.txt","fit.m"]' ? true : undefined), 60_000);
    expect(await readFile(join(b.dir, 'a-only.txt'), 'utf8')).toBe('made on A offline\n');
  }, 240_000);

  it('fsck is clean on all three homes', async () => {
    expect(await fsckFailures(world, [a, b])).toEqual([]);
  }, 120_000);
});
