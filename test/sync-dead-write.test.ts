// A file written while the daemon was dead reaches the server (issue 38, sync model seed 39002
// path 15:1): with the daemon killed (-9), a file `b` replaced by a directory holding `b/a`; after
// the restart `b/a` was on disk but on no server version, and the workstation said in sync.
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseJson } from './cli-harness.js';
import { allInSync, openSyncWorld, type SyncWorld, waitFor, type Workstation } from './sync-harness.js';

let world: SyncWorld | undefined;

afterEach(async () => {
  await world?.dispose();
  world = undefined;
}, 60_000);

/** The server's head has `b/a` as a file (`strata ls b`: one directory's entries). */
async function serverHasBA(w: SyncWorld): Promise<boolean> {
  const listed = await w.serverCli(['ls', 'b', '--project', w.projectId, '--json']);
  if (listed.code !== 0) return false;
  return parseJson<{ items: Array<{ path: string; type: string }> }>(listed).items.some((item) => item.path === 'b/a' && item.type === 'file');
}

async function linkedA(): Promise<{ w: SyncWorld; a: Workstation }> {
  const w = await openSyncWorld('strata-dead-write-');
  world = w;
  const a = w.workstation('wsA');
  await mkdir(join(a.dir, 'c'), { recursive: true });
  await writeFile(join(a.dir, 'b'), 'v3\n');
  await writeFile(join(a.dir, 'c', 'a'), 'v4\n');
  await a.start();
  const init = await a.cli(['init', a.dir, '--server', w.url, '--project', w.projectId]);
  expect(init.code, init.stderr).toBe(0);
  await allInSync([a]);
  return { w, a };
}

describe('a write made while the daemon was dead', () => {
  it('a file replaced by a directory while the daemon was dead is pushed after the restart', async () => {
    const { w, a } = await linkedA();
    await a.kill();
    await rm(join(a.dir, 'b'));
    await mkdir(join(a.dir, 'b'));
    await writeFile(join(a.dir, 'b', 'a'), 'v5\n');
    await a.start();
    await allInSync([a]);
    // In sync means the server's head has the file the disk has (it had a conflict copy of `b` instead).
    expect(await serverHasBA(w), a.daemonLog()).toBe(true);
    expect(a.daemonLog()).not.toMatch(/conflict copy/);
  }, 180_000);

  it('the same with the key refused, then given back with init --server', async () => {
    const { w, a } = await linkedA();
    const created = await w.serverCli(['keys', 'create', '--purpose', 'wsA', '--role', 'admin', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const { key, apiKey } = parseJson<{ key: { keyId: string }; apiKey: string }>(created);
    await a.stop();
    a.env['STRATA_API_KEY'] = apiKey;
    await a.start();
    const relink = await a.cli(['init', a.dir, '--server', w.url, '--project', w.projectId]);
    expect(relink.code, relink.stderr).toBe(0);
    await allInSync([a]);
    await a.kill();
    await rm(join(a.dir, 'b'));
    await mkdir(join(a.dir, 'b'));
    await writeFile(join(a.dir, 'b', 'a'), 'v5\n');
    expect((await w.serverCli(['keys', 'revoke', key.keyId])).code).toBe(0);
    await a.start();
    await waitFor('the refusal', async () => ((await a.cli(['sync', 'wait', '--timeout', '2'])).code === 5 ? true : undefined), 60_000);
    const again = await w.serverCli(['keys', 'create', '--purpose', 'wsA again', '--role', 'admin', '--json']);
    a.env['STRATA_API_KEY'] = parseJson<{ apiKey: string }>(again).apiKey;
    const back = await a.cli(['init', a.dir, '--mode', 'watch', '--server', w.url, '--project', w.projectId]);
    expect(back.code, back.stderr).toBe(0);
    await allInSync([a]);
    // In sync means the server's head has the file the disk has (it had a conflict copy of `b` instead).
    expect(await serverHasBA(w), a.daemonLog()).toBe(true);
    expect(a.daemonLog()).not.toMatch(/conflict copy/);
  }, 180_000);
});
