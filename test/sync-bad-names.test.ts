// A name that is not valid UTF-8 on a linked workstation (issue 38 item 4), real processes on loopback:
// one `strata serve`, A watching its directory, B a clone. `printf x > "$(printf 'bad\xff\xfename.txt')"`
// on A left nothing in status, the log, history, the server or B, and `sync wait` said "in sync".
// Now it travels byte-exactly (recorded with U+EF80-U+EFFF for its stray bytes, engine/raw-names.ts),
// and a name that cannot be recorded at all keeps the workstation out of sync, named.
import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allInSync, fsckFailures, openSyncWorld, reasonsOf, type SyncWorld, waitFor, type Workstation } from './sync-harness.js';

let world: SyncWorld;
let a: Workstation;
let b: Workstation;

const BAD = Buffer.from('bad\xff\xfename.txt', 'latin1');
const SHOWN = 'bad\\xff\\xfename.txt';
const at = (dir: string, name: Buffer) => Buffer.concat([Buffer.from(`${dir}/`), name]);
const namesIn = async (dir: string) => (await readdir(dir, { encoding: 'buffer' })).map((n) => n.toString('hex')).sort();

beforeAll(async () => {
  world = await openSyncWorld('strata-sync-names-');
  a = world.workstation('wsA');
  b = world.workstation('wsB');
  await a.start();
  await b.start();
  await mkdir(a.dir, { recursive: true });
  await writeFile(join(a.dir, 'notes.txt'), 'notes\n');
  expect((await a.cli(['init', a.dir, '--server', world.url, '--project', world.projectId])).code).toBe(0);
  const clone = await b.cli(['clone', world.url, world.projectId, b.dir]);
  expect(clone.code, clone.stderr).toBe(0);
  await allInSync([a, b]);
}, 240_000);

afterAll(async () => {
  await world?.dispose();
}, 60_000);

describe('a name that is not valid UTF-8', () => {
  it('is versioned, synced to the other workstation under the very same bytes, edited there and restored', async () => {
    await writeFile(at(a.dir, BAD), 'x');
    await allInSync([a, b]);
    expect(await readFile(at(b.dir, BAD), 'utf8')).toBe('x');
    expect(await namesIn(b.dir)).toEqual(await namesIn(a.dir));

    // History shows the stray bytes as \xHH and takes the same form back as a path argument.
    const history = await a.cli(['history', SHOWN], { cwd: a.dir });
    expect(history.code, history.stderr).toBe(0);
    expect(history.stdout).toContain(SHOWN);
    const first = /\b([0-9a-f]{10})\b/.exec(history.stdout.split('\n')[1] ?? '')?.[1];
    expect(first, history.stdout).toBeDefined();

    // Edited on B: A gets it under the same name.
    await writeFile(at(b.dir, BAD), 'edited on B');
    await allInSync([b, a]);
    expect(await readFile(at(a.dir, BAD), 'utf8')).toBe('edited on B');

    // Restored on A to its first version: on disk here and on B, still under the same bytes.
    const restore = await a.cli(['restore', first!], { cwd: a.dir });
    expect(restore.code, restore.stderr).toBe(0);
    expect(restore.stdout).toContain(`restored ${SHOWN}`);
    await allInSync([a, b]);
    expect(await readFile(at(a.dir, BAD), 'utf8')).toBe('x');
    expect(await readFile(at(b.dir, BAD), 'utf8')).toBe('x');
    expect(await namesIn(b.dir)).toEqual(await namesIn(a.dir));
    // A checkout of a snapshot writes the same bytes too.
    const snapshot = await a.cli(['snapshot', 'create', '--json'], { cwd: a.dir });
    expect(snapshot.code, snapshot.stderr).toBe(0);
    const out = join(world.root, 'checkout');
    const checkout = await a.cli(['checkout', (JSON.parse(snapshot.stdout) as { snapshotId: string }).snapshotId, '--to', out], { cwd: a.dir });
    expect(checkout.code, checkout.stderr).toBe(0);
    expect(await readFile(at(out, BAD), 'utf8')).toBe('x');
    expect(await fsckFailures(world, [a, b])).toEqual([]);
  }, 240_000);

  it('one the project cannot record is never silent: strata status lists it, the log warns once, sync status names it and sync wait exits 4', async () => {
    // Valid UTF-8 holding a character reserved for stray bytes (U+EFFF): recorded, it would be BAD.
    const reserved = 'res\uefff.txt';
    await writeFile(join(a.dir, reserved), 'r');
    const project = await waitFor(
      'A to say the name is not representable',
      async () => {
        const [p] = await a.syncStatus();
        return reasonsOf(p).some((r) => r.code === 'UNREPRESENTABLE') ? p : undefined;
      },
      60_000,
    );
    expect(project.sync.inSync).toBe(false);
    const reason = reasonsOf(project).find((r) => r.code === 'UNREPRESENTABLE')!;
    expect(reason.needsYou).toBe(true);
    // Shown with the character as \uefff: as \xff it would read as the byte it stands for.
    const shown = 'res\\uefff.txt';
    expect(reason.message).toContain(shown);

    const line = `not versioned: name holds a character Strata reserves for bytes that are not UTF-8 (U+EF80-U+EFFF): ${shown}`;
    const status = await a.cli(['status']);
    expect(status.stdout + status.stderr).toContain(line);
    const json = JSON.parse((await a.cli(['status', '--json'])).stdout) as { projects: Array<{ warnings: string[]; unrepresentable: { count: number; paths: string[] } }> };
    expect(json.projects[0]!.unrepresentable).toEqual({ count: 1, paths: [shown] });
    expect(json.projects[0]!.warnings).toContain(line);
    expect((await a.cli(['sync', 'status'])).stdout).toContain(`not in sync: name not representable: ${shown}`);

    const started = Date.now();
    const wait = await a.cli(['sync', 'wait', '--timeout', '60']);
    expect(wait.code, wait.stderr).toBe(4);
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(wait.stderr).toContain('name not representable');
    // Warned about once, however often status and the scans looked at it.
    await a.cli(['status']);
    const warned = a.daemonLog().split('\n').filter((l) => l.includes('"msg":"not versioned: name holds a character') && l.includes(JSON.stringify(shown).slice(1, -1)));
    expect(warned.length, a.daemonLog()).toBe(1);

    // Renamed: it syncs, and both sides are in sync again.
    await rename(join(a.dir, reserved), join(a.dir, 'renamed.txt'));
    await allInSync([a, b]);
    expect(await readFile(join(b.dir, 'renamed.txt'), 'utf8')).toBe('r');
  }, 240_000);

  it('a mounted clone shows the very bytes, and a name the mount takes in bytes reaches the watched workstations', async () => {
    const c = world.workstation('wsC');
    try {
      await c.start();
      const clone = await c.cli(['clone', world.url, world.projectId, c.dir, '--mount']);
      expect(clone.code, clone.stderr).toBe(0);
      await allInSync([a, b, c]);
      // The mount lists A's name as its bytes (it once showed the private-use characters as UTF-8).
      expect(await namesIn(c.dir)).toEqual(await namesIn(a.dir));
      expect(await readFile(at(c.dir, BAD), 'utf8')).toBe('x');

      const made = Buffer.from('d\xe9bit.csv', 'latin1');
      await writeFile(at(c.dir, made), 'from the mount');
      await allInSync([c, a, b]);
      for (const ws of [a, b]) expect(await readFile(at(ws.dir, made), 'utf8')).toBe('from the mount');
      expect(await namesIn(a.dir)).toEqual(await namesIn(c.dir));
    } finally {
      await promisify(execFile)('fusermount3', ['-uz', c.dir], { timeout: 10_000 }).catch(() => undefined);
    }
  }, 240_000);
});
