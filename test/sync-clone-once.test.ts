// One home keeps one local copy of a server project, and the home a command uses is the one the user
// named (STRATA_HOME) even when the working directory is another home's project. Found while writing
// the README: `strata clone` run from inside a linked project put the clone into that project's home,
// where two local projects then synced one server project and both failed (SQLITE_CONSTRAINT_UNIQUE).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson } from './cli-harness.js';
import { openSyncWorld, type SyncWorld } from './sync-harness.js';

let world: SyncWorld;

beforeAll(async () => {
  world = await openSyncWorld('strata-clone-once-');
}, 60_000);

afterAll(async () => {
  await world?.dispose();
});

describe('strata clone', () => {
  it('refuses a second local copy of a server project in one home, naming the first', async () => {
    const ws = world.workstation('twice');
    const first = await ws.cli(['clone', world.url, world.projectId, ws.dir, '--json']);
    expect(first.code, first.stderr).toBe(0);
    const second = await ws.cli(['clone', world.url, world.projectId, `${ws.dir}-again`, '--json']);
    expect(second.code).toBe(4);
    const error = parseJson<{ error: { code: string; message: string; details: { dir: string } } }>(second).error;
    expect(error.code).toBe('PROJECT_ALREADY_LINKED');
    expect(error.message).toContain(`already on this machine, at ${ws.dir}`);
    // Nothing was bound for the refused directory.
    const status = parseJson<{ projects: Array<{ dir: string }> }>(await ws.cli(['status', '--json']));
    expect(status.projects.map((p) => p.dir)).toEqual([ws.dir]);
  });

  it('puts the clone into STRATA_HOME, not into the home of the project the command runs in', async () => {
    const inside = world.workstation('inside');
    expect((await inside.cli(['clone', world.url, world.projectId, inside.dir])).code).toBe(0);
    const other = world.workstation('other');
    const target = join(other.dir, 'laptop-copy');
    // Run from inside `inside`'s project directory, with `other`'s home in STRATA_HOME.
    const clone = await other.cli(['clone', world.url, world.projectId, target, '--json'], { cwd: inside.dir });
    expect(clone.code, clone.stderr).toBe(0);
    const file = JSON.parse(await readFile(join(target, '.strata', 'project.json'), 'utf8')) as { home: string };
    expect(file.home).toBe(other.home);
    const insideStatus = parseJson<{ projects: Array<{ dir: string }> }>(await inside.cli(['status', '--json']));
    expect(insideStatus.projects.map((p) => p.dir)).toEqual([inside.dir]);
  });
});
