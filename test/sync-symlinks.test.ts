// Symbolic links through sync (issue 15), all real processes: a link made on one workstation goes up
// as a link version (the server stores the flag) and comes down on the other workstation as a real
// link on disk (watch mode), with its exact target, whether it points inside the project, outside it
// or nowhere. A link replaced by a file, a file by a link, a new target: each travels.
import { lstat, mkdir, readdir, readFile, readlink, symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson } from './cli-harness.js';
import { allInSync, fsckFailures, openSyncWorld, type SyncWorld, type Workstation, waitFor } from './sync-harness.js';

let world: SyncWorld;
let a: Workstation;
let b: Workstation;

/** path → `file:<content>` or `link:<target>` of everything under dir (`.strata` left out). */
async function diskTree(dir: string): Promise<Record<string, string>> {
  const tree: Record<string, string> = {};
  const walk = async (rel: string): Promise<void> => {
    for (const entry of await readdir(join(dir, rel), { withFileTypes: true })) {
      const path = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (path === '.strata') continue;
      if (entry.isDirectory()) await walk(path);
      else if (entry.isSymbolicLink()) tree[path] = `link:${await readlink(join(dir, path))}`;
      else if (entry.isFile()) tree[path] = `file:${await readFile(join(dir, path), 'utf8')}`;
    }
  };
  await walk('');
  return Object.fromEntries(Object.entries(tree).sort(([x], [y]) => (x < y ? -1 : 1)));
}

async function sameDisks(): Promise<Record<string, string>> {
  await allInSync([a, b]);
  let last: Array<Record<string, string>> = [];
  try {
    return await waitFor(
      'both directories equal',
      async () => {
        last = [await diskTree(a.dir), await diskTree(b.dir)];
        return JSON.stringify(last[0]) === JSON.stringify(last[1]) ? last[0] : undefined;
      },
      30_000,
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}\nA: ${JSON.stringify(last[0])}\nB: ${JSON.stringify(last[1])}`);
  }
}

async function serverHistory(path: string): Promise<Array<{ kind: string; symlink: boolean; contentHash: string | null }>> {
  const result = await world.serverCli(['history', path, '--project', world.projectId, '--json']);
  expect(result.code, result.stderr).toBe(0);
  return parseJson<{ items: Array<{ kind: string; symlink: boolean; contentHash: string | null }> }>(result).items;
}

beforeAll(async () => {
  world = await openSyncWorld('strata-sync-links-');
  a = world.workstation('wsA');
  b = world.workstation('wsB');
  await mkdir(join(a.dir, 'runs', 'r1'), { recursive: true });
  await writeFile(join(a.dir, 'runs', 'r1', 'out.csv'), '1,2\n');
  await symlink('runs/r1', join(a.dir, 'latest'));
  await symlink('/scratch/shared/data', join(a.dir, 'scratch'));
  await symlink('missing/file', join(a.dir, 'dangling'));
  await a.start();
  await b.start();
  const init = await a.cli(['init', a.dir, '--server', world.url, '--project', world.projectId]);
  expect(init.code, init.stderr).toBe(0);
  const clone = await b.cli(['clone', world.url, world.projectId, b.dir]);
  expect(clone.code, clone.stderr).toBe(0);
}, 120_000);

afterAll(async () => {
  await world?.dispose();
}, 60_000);

describe('symbolic links through sync', () => {
  it('links made before linking go up as links and come down on the clone as real links', async () => {
    expect(await sameDisks()).toEqual({
      dangling: 'link:missing/file',
      latest: 'link:runs/r1',
      'runs/r1/out.csv': 'file:1,2\n',
      scratch: 'link:/scratch/shared/data',
    });
    expect((await lstat(join(b.dir, 'latest'))).isSymbolicLink()).toBe(true);
    expect((await serverHistory('latest')).map((v) => v.symlink)).toEqual([true]);
    expect((await serverHistory('runs/r1/out.csv')).map((v) => v.symlink)).toEqual([false]);
  }, 240_000);

  it('a new target, a link replaced by a file and a file by a link travel both ways', async () => {
    await mkdir(join(a.dir, 'runs', 'r2'));
    await writeFile(join(a.dir, 'runs', 'r2', 'out.csv'), '3,4\n');
    await unlink(join(a.dir, 'latest'));
    await symlink('runs/r2', join(a.dir, 'latest'));
    await unlink(join(a.dir, 'dangling'));
    await writeFile(join(a.dir, 'dangling'), 'a file now');
    await writeFile(join(b.dir, 'notes.txt'), 'notes\n');
    await waitFor('notes.txt on A', async () => ((await readFile(join(a.dir, 'notes.txt'), 'utf8').catch(() => null)) === 'notes\n' ? true : undefined), 60_000);
    await symlink('notes.txt', join(b.dir, 'readme'));
    expect(await sameDisks()).toEqual({
      dangling: 'file:a file now',
      latest: 'link:runs/r2',
      'notes.txt': 'file:notes\n',
      readme: 'link:notes.txt',
      'runs/r1/out.csv': 'file:1,2\n',
      'runs/r2/out.csv': 'file:3,4\n',
      scratch: 'link:/scratch/shared/data',
    });
    // B turns the file into a link with the very same bytes as target: a version of its own, on A too.
    await unlink(join(b.dir, 'dangling'));
    await symlink('a file now', join(b.dir, 'dangling'));
    await waitFor('dangling a link on A', async () => ((await lstat(join(a.dir, 'dangling')).catch(() => null))?.isSymbolicLink() ? true : undefined), 60_000);
    expect(await readlink(join(a.dir, 'dangling'))).toBe('a file now');
    await sameDisks();
    // (an unlink and a write of the same path in one settle period may also record a deletion between)
    expect((await serverHistory('dangling')).filter((v) => v.kind !== 'delete').map((v) => [v.kind, v.symlink])).toEqual([
      ['write', true],
      ['write', false],
      ['write', true],
    ]);
    const [asLink, asFile] = (await serverHistory('dangling')).filter((v) => v.kind !== 'delete');
    expect(asLink!.contentHash).toBe(asFile!.contentHash);
    expect((await serverHistory('latest')).map((v) => v.symlink)).toEqual([true, true]);
    expect(await fsckFailures(world, [a, b])).toEqual([]);
  }, 240_000);
});
