// The mass-delete guard and the catch-up scan after a restart (issue 3, watch mode).

import { chmod, rm, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { VersionRecord } from '../engine/types.js';
import { sh, sleep, type WatchedProject, watchProject } from './daemon-harness.js';
import { useEnv } from './helpers/env.js';

async function projectHistory(w: WatchedProject): Promise<VersionRecord[]> {
  const page = await w.api<{ items: VersionRecord[] }>('GET', `/v1/projects/${w.projectId}/history?limit=1000`);
  return page.items;
}

describe('mass-delete guard', () => {
  let w: WatchedProject | undefined;
  // Every file counts (the files here are seconds old: young files never do; test/guard-young-files).
  useEnv('STRATA_GUARD_YOUNG_MS', '0');
  afterEach(async () => {
    await w?.dispose();
    w = undefined;
  });

  it('records a few deletions; trips on 80 of 100 vanishing at once (no tombstones, data kept); reset records them', async () => {
    w = await watchProject({
      prepare: async (dir) => {
        for (let i = 0; i < 100; i++) await writeFile(join(dir, `f${i}.txt`), `file ${i}\n`);
      },
    });
    await w.idle();
    expect((await w.tree()).size).toBe(100);

    // an ordinary deletion is a tombstone
    await rm(join(w.dir, 'f99.txt'));
    await w.idle();
    expect((await w.history('f99.txt'))[0]!.kind).toBe('delete');
    expect((await w.status()).massDeleteGuard.tripped).toBe(false);

    await sh('bash', ['-c', 'rm f{0..79}.txt'], { cwd: w.dir });
    await w.idle();
    await sleep(1_000);
    const status = await w.status();
    expect(status.state).toBe('guarded');
    expect(status.massDeleteGuard.tripped).toBe(true);
    expect(status.massDeleteGuard.missing).toBe(80);
    expect(status.massDeleteGuard.since).toMatch(/^\d{4}-\d\d-\d\dT/);
    const deletes = (await projectHistory(w)).filter((v) => v.kind === 'delete');
    expect(deletes.map((v) => v.path)).toEqual(['f99.txt']);
    const tree = await w.tree();
    expect(tree.size).toBe(99);
    expect(await w.read('f5.txt')).toBe('file 5\n');

    // still guarded after a restart: the catch-up scan finds them missing, records nothing
    await w.restart();
    await w.idle();
    expect((await w.status()).massDeleteGuard.tripped).toBe(true);
    expect((await projectHistory(w)).filter((v) => v.kind === 'delete')).toHaveLength(1);
    // the scan saw the same 80 paths missing again: still 80, not 160 (issue 13 item 7), and again
    await w.restart();
    await w.idle();
    expect((await w.status()).massDeleteGuard.missing).toBe(80);
    // a file that comes back is no longer missing
    await writeFile(join(w.dir, 'f79.txt'), 'file 79, back\n');
    await w.idle();
    expect((await w.status()).massDeleteGuard.missing).toBe(79);

    // writes still work while guarded
    await writeFile(join(w.dir, 'new.txt'), 'new\n');
    await w.idle();
    expect(await w.history('new.txt')).toHaveLength(1);

    const after = await w.api<{ massDeleteGuard: { tripped: boolean }; state: string }>('POST', `/v1/daemon/projects/${w.projectId}/guard/reset`, {});
    expect(after.massDeleteGuard.tripped).toBe(false);
    await w.idle();
    expect((await projectHistory(w)).filter((v) => v.kind === 'delete')).toHaveLength(80);
    expect((await w.tree()).size).toBe(21);
    expect((await w.status()).state).toBe('watching');
  });
});

describe('catch-up scan after a restart', () => {
  let w: WatchedProject | undefined;
  afterEach(async () => {
    await w?.dispose();
    w = undefined;
  });

  it('versions what changed while the daemon was down, and nothing else', async () => {
    w = await watchProject({
      prepare: async (dir) => {
        for (const name of ['a', 'b', 'c', 'd', 'same']) await writeFile(join(dir, `${name}.txt`), `${name} v1\n`);
        for (let i = 0; i < 50; i++) await writeFile(join(dir, `bulk${i}.txt`), `bulk ${i}\n`);
      },
    });
    await w.idle();
    const first = await w.status();
    expect(first.scan).toMatchObject({ kind: 'initial', finished: true, total: 55, captured: 55 });
    const before = (await projectHistory(w)).length;
    expect(before).toBe(55);

    await w.stop();
    await writeFile(join(w.dir, 'a.txt'), 'a v2 changed\n');
    const later = new Date(Date.now() + 5_000);
    await utimes(join(w.dir, 'b.txt'), later, later); // touched: same bytes
    await rm(join(w.dir, 'c.txt'));
    await chmod(join(w.dir, 'd.txt'), 0o755);
    await writeFile(join(w.dir, 'e.txt'), 'e v1\n');
    await w.restart();
    await w.idle();

    const status = await w.status();
    expect(status.scan).toMatchObject({ kind: 'catch-up', finished: true, captured: 3 });
    const added = (await projectHistory(w)).slice(0, -before);
    expect(added.map((v) => `${v.kind} ${v.path}${v.executable ? ' +x' : ''}`).sort()).toEqual(['delete c.txt', 'write a.txt', 'write d.txt +x', 'write e.txt']);
    expect(await w.read('a.txt')).toBe('a v2 changed\n');

    // and a restart with nothing changed versions nothing
    await w.restart();
    await w.idle();
    expect((await w.status()).scan).toMatchObject({ kind: 'catch-up', finished: true, captured: 0 });
    expect((await projectHistory(w)).length).toBe(before + 4);
  });
});
