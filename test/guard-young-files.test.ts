// The mass-delete guard leaves out files made in the last hour (daemon/capture/young-files.ts):
// removing a tree one just made (`tar x`, a build, a simulation's output, then `rm -rf` of it) is
// ordinary work. It tripped: `rm -rf` of 10,000 files written a minute earlier was refused on a mount
// after ~3,200 (EPERM for the rest), and watch mode stopped recording deletions (issue 39 item 6).
// Old files still trip it, young ones beside them or not. The hour is STRATA_GUARD_YOUNG_MS here, a
// second or two, so "old" comes within the test.
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type WatchedProject, waitFor, watchProject } from './daemon-harness.js';
import { useEnv } from './helpers/env.js';
import { inMount, type MountedDir, mountProject } from './mount-harness.js';

const YOUNG_MS = 1_500;

async function oldEnough(since: number): Promise<void> {
  await waitFor('the files to be older than the young window', async () => (Date.now() - since > YOUNG_MS + 200 ? true : undefined), 30_000);
}

describe('on a mount', () => {
  let m: MountedDir;
  beforeAll(async () => {
    m = await mountProject({ env: { STRATA_GUARD_YOUNG_MS: String(YOUNG_MS) } });
  });
  afterAll(async () => {
    await m?.dispose();
  });

  it('rm -rf of a tree made just now goes through whole, each deletion recorded', async () => {
    await inMount(m, 'echo keep > keep.txt; mkdir -p out; for i in $(seq 1 300); do echo $i > out/f$i; done');
    await m.idle(60_000);
    const removed = await inMount(m, 'rm -rf out', 60_000);
    expect(removed.code, removed.stderr).toBe(0);
    expect((await inMount(m, 'ls -A')).stdout).not.toMatch(/^out$/m);
    await m.idle(60_000);
    expect(await m.stat('out/f1')).toBeNull();
    expect(await m.stat('out/f300')).toBeNull();
    const status = await m.api<{ projects: Array<{ massDeleteGuard: { tripped: boolean } }> }>('GET', '/v1/daemon/status');
    expect(status.projects[0]!.massDeleteGuard.tripped).toBe(false);
  }, 180_000);

  it('old files still trip it (EPERM), young ones or not', async () => {
    await inMount(m, 'mkdir -p data; for i in $(seq 1 40); do echo $i > data/d$i; done');
    await m.idle(60_000);
    await oldEnough(Date.now());
    const removed = await inMount(m, 'rm -rf data 2>&1 || echo "rm exited $?"', 60_000);
    expect(removed.stdout).toMatch(/Operation not permitted/);
    expect(removed.stdout).toMatch(/rm exited 1/);
    const status = await m.api<{ projects: Array<{ massDeleteGuard: { tripped: boolean } }> }>('GET', '/v1/daemon/status');
    expect(status.projects[0]!.massDeleteGuard.tripped).toBe(true);
  }, 180_000);
});

describe('watching', () => {
  let w: WatchedProject | undefined;
  useEnv('STRATA_GUARD_YOUNG_MS', String(YOUNG_MS));
  afterEach(async () => {
    await w?.dispose();
    w = undefined;
  });

  it('records the deletion of a tree made just now; an old one trips the guard', async () => {
    w = await watchProject();
    await writeFile(join(w.dir, 'keep.txt'), 'keep\n');
    await mkdir(join(w.dir, 'out'));
    for (let i = 0; i < 100; i++) await writeFile(join(w.dir, 'out', `f${i}`), `${i}\n`);
    await w.idle(60_000);
    await rm(join(w.dir, 'out'), { recursive: true });
    await waitFor('the deletions recorded', async () => ((await w!.history('out/f99'))[0]?.kind === 'delete' ? true : undefined), 60_000);
    expect((await w.status()).massDeleteGuard.tripped).toBe(false);

    await mkdir(join(w.dir, 'data'));
    for (let i = 0; i < 100; i++) await writeFile(join(w.dir, 'data', `d${i}`), `${i}\n`);
    await w.idle(60_000);
    await oldEnough(Date.now());
    await rm(join(w.dir, 'data'), { recursive: true });
    await waitFor('the guard to trip', async () => ((await w!.status()).massDeleteGuard.tripped ? true : undefined), 60_000);
    expect((await w.history('data/d1'))[0]?.kind).toBe('write');
  }, 180_000);
});
