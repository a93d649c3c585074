// Pulled files keep their version's time as mtime (issue 38, item 7), real processes on loopback: A
// watching, B a watched clone, C a mounted clone. A pulled file had the time of the pull, so make
// rebuilt what had not changed, and rsync -t and backup tools took every pulled file for a new one.
import { execFile } from 'node:child_process';
import { lstat, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson } from './cli-harness.js';
import { allInSync, openSyncWorld, type SyncWorld, waitFor, type Workstation } from './sync-harness.js';

let world: SyncWorld;
let a: Workstation;
let b: Workstation;
let c: Workstation;

async function unmount(dir: string): Promise<void> {
  await promisify(execFile)('fusermount3', ['-uz', dir], { timeout: 10_000 }).catch(() => undefined);
}

async function versionTime(ws: Workstation, path: string): Promise<number> {
  const result = await ws.cli(['history', path, '--json'], { cwd: ws.dir });
  expect(result.code, result.stderr).toBe(0);
  return Date.parse(parseJson<{ items: Array<{ timestamp: string }> }>(result).items[0]!.timestamp);
}

beforeAll(async () => {
  world = await openSyncWorld('strata-sync-mtime-');
  a = world.workstation('wsA');
  b = world.workstation('wsB');
  c = world.workstation('wsC');
  await mkdir(join(a.dir, 'src'), { recursive: true });
  await writeFile(join(a.dir, 'src', 'model.py'), 'print("model")\n');
  await a.start();
  await b.start();
  await c.start();
  const init = await a.cli(['init', a.dir, '--server', world.url, '--project', world.projectId]);
  expect(init.code, init.stderr).toBe(0);
  await allInSync([a]);
}, 180_000);

afterAll(async () => {
  try {
    await world?.dispose();
  } finally {
    if (c !== undefined) await unmount(c.dir);
  }
}, 60_000);

describe('mtimes of pulled files', () => {
  it("a clone (watched or mounted) and a later pull give each file its version's time, not the pull's", async () => {
    const made = await versionTime(a, 'src/model.py');
    // The clones start well after the version was made, so the pull's time is not the version's.
    await waitFor('two seconds past the version', async () => Date.now() - made > 2_000 || undefined, 10_000);
    expect((await b.cli(['clone', world.url, world.projectId, b.dir])).code).toBe(0);
    expect((await c.cli(['clone', world.url, world.projectId, c.dir, '--mount'])).code).toBe(0);
    await allInSync([a, b, c]);
    for (const ws of [b, c]) {
      const mtime = (await lstat(join(ws.dir, 'src', 'model.py'))).mtimeMs;
      expect(Math.abs(mtime - made), `${ws.name}: mtime ${new Date(mtime).toISOString()}, version ${new Date(made).toISOString()}`).toBeLessThan(2);
    }

    // An edit on A, pulled by both while they run.
    await writeFile(join(a.dir, 'src', 'model.py'), 'print("model 2")\n');
    await allInSync([a]);
    const edited = await versionTime(a, 'src/model.py');
    await allInSync([b, c]);
    await waitFor('two seconds past the edit', async () => Date.now() - edited > 2_000 || undefined, 10_000);
    for (const ws of [b, c]) {
      await waitFor(`${ws.name} has the edit`, async () => (await versionTime(ws, 'src/model.py')) === edited || undefined, 30_000);
      const mtime = (await lstat(join(ws.dir, 'src', 'model.py'))).mtimeMs;
      expect(Math.abs(mtime - edited), `${ws.name}: mtime ${new Date(mtime).toISOString()}, version ${new Date(edited).toISOString()}`).toBeLessThan(2);
    }
  }, 300_000);
});
