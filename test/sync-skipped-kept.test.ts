// A server version this workstation could not take (skipped: a directory of its own stood where the
// server has a file) stays a reason not to say "in sync" until the workstation has it. The skip was
// forgotten when any later version of the path crossed to the server — but a version that crosses as
// a conflict copy (or a deletion the server's version supersedes) leaves the server's version where
// it was, and still not here. Seen in the sync model's pull path with file/directory conflicts
// (seed 38005 path 9: wsB with the file `a` and no `a/a` the head had, saying inSync: true).
//
// Forced here without a race: while B's daemon is stopped, A makes a file `d` and B's disk gets a
// directory `d` with a file in it. B starts: its `d/y` goes to the server below a conflict copy and
// the server's file `d` is skipped here. Then B replaces its directory by a file `d` of its own,
// which the server keeps as a conflict copy of A's `d`: B's `d` is not the server's, and B must not
// say it is in sync.
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allInSync, openSyncWorld, type SyncWorld, treeOf, waitFor } from './sync-harness.js';

let world: SyncWorld;

beforeAll(async () => {
  world = await openSyncWorld('strata-sync-skipped-kept-');
}, 120_000);

afterAll(async () => {
  await world?.dispose();
}, 60_000);

interface Verdict {
  inSync: boolean;
  reasons: Array<{ code: string; message: string }>;
}

describe('sync: a skipped server version', () => {
  it('is not forgotten when a version of the path made here crosses as a conflict copy', async () => {
    const a = world.workstation('wsA');
    const b = world.workstation('wsB');
    await mkdir(a.dir, { recursive: true });
    await writeFile(join(a.dir, 'start.txt'), 'start\n');
    await a.start();
    await b.start();
    expect((await a.cli(['init', a.dir, '--server', world.url, '--project', world.projectId])).code).toBe(0);
    expect((await b.cli(['clone', world.url, world.projectId, b.dir])).code).toBe(0);
    await allInSync([a, b]);

    await b.stop();
    await writeFile(join(a.dir, 'd'), 'd from A\n');
    expect((await a.cli(['sync', 'wait', '--timeout', '60'], { timeoutMs: 90_000 })).code).toBe(0);
    await mkdir(join(b.dir, 'd'));
    await writeFile(join(b.dir, 'd', 'y'), 'below d on B\n');
    // An ignored file too: without it the directory, its one file kept on the server as a copy, now
    // makes way for the server's file (sync-make-way-above.ts); with it, that would lose the file.
    await writeFile(join(b.dir, 'd', 'y.swp'), 'editor state\n');
    await b.start();

    const verdict = async (): Promise<Verdict> => {
      const result = await b.cli(['sync', 'status', '--json']);
      return (JSON.parse(result.stdout) as { projects: Array<{ sync: Verdict }> }).projects[0]!.sync;
    };
    await waitFor('B skips the server\'s d', async () => ((await verdict()).reasons.some((r) => r.code === 'SKIPPED') ? true : undefined), 60_000);

    await rm(join(b.dir, 'd'), { recursive: true });
    await writeFile(join(b.dir, 'd'), 'd from B\n');
    // B's `d` is on the server, as a conflict copy of A's, and B's answers are back. (Asked of the
    // server, not of A's disk: A's engine gets the copy, but its disk did not in 3 of 5 runs — a
    // directory copy `d (conflict wsB …)/y` replaced by a file copy of the same name; open.)
    await waitFor(
      'B\'s d as a conflict copy on the server',
      async () => ((await world.serverCli(['ls', '--project', world.projectId])).stdout.includes('d (conflict wsB ') ? true : undefined),
      90_000,
    );
    const settled = await waitFor(
      'B done with its own changes',
      async () => {
        const now = await verdict();
        const working = now.reasons.some((r) => ['CAPTURING', 'NOT_PUSHED', 'NOT_PULLED', 'PULL_UNCONFIRMED', 'NOT_ON_DISK', 'STARTING', 'OFFLINE'].includes(r.code));
        return working ? undefined : now;
      },
      60_000,
    );
    expect((await world.serverCli(['cat', 'd', '--project', world.projectId])).stdout).toBe('d from A\n');
    expect((await treeOf(b.dir))['d']).toBe('d from B\n');
    // B's `d` is not the server's: B is not in sync, and says why.
    expect(settled.inSync).toBe(false);
    expect(settled.reasons.map((r) => r.code)).toContain('SKIPPED');
  }, 300_000);
});
