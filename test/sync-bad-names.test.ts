// A name that is not valid UTF-8 on a linked workstation (issue 38 item 4), real processes on loopback:
// one `strata serve`, A watching its directory, B a clone. `printf x > "$(printf 'bad\xff\xfename.txt')"`
// on A left nothing in status, the log, history, the server or B, and `sync wait` said "in sync".
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allInSync, openSyncWorld, type SyncProject, type SyncWorld, treeOf, waitFor, type Workstation } from './sync-harness.js';

let world: SyncWorld;
let a: Workstation;
let b: Workstation;

type Reason = { code: string; message: string; needsYou: boolean };
const reasonsOf = (project: SyncProject | undefined) => (project?.sync as { reasons?: Reason[] } | undefined)?.reasons ?? [];
const BAD = Buffer.from('bad\xff\xfename.txt', 'latin1');
const SHOWN = 'bad\\xff\\xfename.txt';

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
  it('is never silent: strata status lists it, the log warns once, sync status names it and sync wait exits 4', async () => {
    await writeFile(Buffer.concat([Buffer.from(`${a.dir}/`), BAD]), 'x');
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
    expect(reason.message).toContain(SHOWN);

    const status = await a.cli(['status']);
    expect(status.stdout + status.stderr).toContain(`not versioned: name is not valid UTF-8: ${SHOWN}`);
    const json = JSON.parse((await a.cli(['status', '--json'])).stdout) as { projects: Array<{ warnings: string[]; unrepresentable: { count: number; paths: string[] } }> };
    expect(json.projects[0]!.unrepresentable).toEqual({ count: 1, paths: [SHOWN] });
    expect(json.projects[0]!.warnings).toContain(`not versioned: name is not valid UTF-8: ${SHOWN}`);
    expect((await a.cli(['sync', 'status'])).stdout).toContain(`not in sync: name not representable: ${SHOWN}`);

    const started = Date.now();
    const wait = await a.cli(['sync', 'wait', '--timeout', '60']);
    expect(wait.code, wait.stderr).toBe(4);
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(wait.stderr).toContain(SHOWN);
    // Warned about once, however often status and the scans looked at it.
    await a.cli(['status']);
    // The log is JSON lines: the backslashes of \xHH come doubled.
    const warned = a.daemonLog().split('\n').filter((line) => line.includes(`"msg":"not versioned: name is not valid UTF-8: ${JSON.stringify(SHOWN).slice(1, -1)}"`));
    expect(warned.length, a.daemonLog()).toBe(1);

    // Renamed to a UTF-8 name: it syncs, and both sides are in sync again.
    await rename(Buffer.concat([Buffer.from(`${a.dir}/`), BAD]), join(a.dir, 'renamed.txt'));
    await allInSync([a, b]);
    expect((await treeOf(b.dir))['renamed.txt']).toBe('x');
  }, 240_000);
});
