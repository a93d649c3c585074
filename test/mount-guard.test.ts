// The mass-delete guard through a real FUSE mount (issue 3): deletions before it trips are tombstones
// (restorable); once many tracked files go at once, further unlinks of tracked files fail with EPERM,
// the files stay readable, status says so — across a restart — until `strata guard reset`. Scratch
// files a tool creates and deletes before they are versioned neither count nor get refused.
// `strata mount` runs in a child process; real `rm`, `rmdir`, `cat`; dispose() unmounts.

import { afterEach, describe, expect, it } from 'vitest';
import type { ProjectStatus } from '../daemon/project-runner.js';
import type { VersionRecord } from '../engine/types.js';
import { inMount, type MountedDir, mountProject, sh } from './mount-harness.js';

async function projectStatus(m: MountedDir): Promise<ProjectStatus> {
  const status = await m.api<{ projects: ProjectStatus[] }>('GET', '/v1/daemon/status');
  return status.projects.find((p) => p.projectId === m.projectId)!;
}

async function deletedPaths(m: MountedDir): Promise<string[]> {
  const items = (await m.api<{ items: VersionRecord[] }>('GET', `/v1/projects/${m.projectId}/history?limit=1000`)).items;
  return items.filter((v) => v.kind === 'delete').map((v) => v.path);
}

/** A shell snippet in the mount that may fail (rm refused): exit code and stderr, bounded in time. */
function tryInMount(m: MountedDir, script: string) {
  return sh('bash', ['-uo', 'pipefail', '-c', script], { cwd: m.dir, timeoutMs: 30_000, allowFail: true });
}

describe('strata mount: mass-delete guard', () => {
  let m: MountedDir | undefined;
  let root: string | undefined;
  afterEach(async () => {
    await m?.dispose();
    m = undefined;
    root = undefined;
  });

  it('tombstones a few deletions; refuses unlinks with EPERM once 80 of 100 go at once, keeps them across a restart, until reset', async () => {
    // Every file counts (the files here are seconds old: young files never do; test/guard-young-files).
    m = await mountProject({ env: { STRATA_GUARD_YOUNG_MS: '0' } });
    root = m.root;
    await inMount(m, 'mkdir g && for i in $(seq 0 99); do echo "file $i" > g/f$i.txt; done');
    await m.idle();

    // 40 scratch files created and deleted at once (held as temp names, never versioned): not counted.
    await inMount(m, 'for i in $(seq 1 40); do printf x > g/s$i.tmp; rm g/s$i.tmp; done');
    expect((await projectStatus(m)).massDeleteGuard.tripped).toBe(false);

    // An ordinary deletion is a tombstone.
    await inMount(m, 'rm g/f99.txt');
    await m.idle();
    expect((await m.history('g/f99.txt'))[0]!.kind).toBe('delete');
    expect((await projectStatus(m)).massDeleteGuard.tripped).toBe(false);

    const rm = await tryInMount(m, 'rm -f g/f{0..79}.txt');
    expect(rm.code).not.toBe(0);
    expect(rm.stderr).toMatch(/Operation not permitted/);
    await m.idle();

    const deleted = (await deletedPaths(m)).filter((path) => path !== 'g/f99.txt');
    const listed = (await inMount(m, 'ls g')).stdout.split('\n').filter((name) => /^f\d+\.txt$/.test(name));
    // The guard trips once more than 25% of the files (and at least 20) went within 5 s.
    expect(deleted.length).toBeGreaterThanOrEqual(19);
    expect(deleted.length).toBeLessThan(40);
    expect(deleted.length + listed.length).toBe(99);
    const status = await projectStatus(m);
    expect(status.state).toBe('guarded');
    expect(status.massDeleteGuard.tripped).toBe(true);
    expect(status.massDeleteGuard.missing).toBe(80 - deleted.length);
    expect(status.warnings.join('\n')).toMatch(/MASS-DELETE GUARD TRIPPED.*EPERM.*strata guard reset/);
    expect((await inMount(m, 'cat g/f79.txt')).stdout).toBe('file 79\n');

    // Refused again (counted once per path: issue 13 item 7); scratch files and empty directories (no data) come and go; writes
    // go on as usual.
    expect((await tryInMount(m, 'rm g/f79.txt')).stderr).toMatch(/Operation not permitted/);
    await inMount(m, 'printf x > g/scratch.tmp && rm g/scratch.tmp && mkdir e && rmdir e && mkdir e');
    await inMount(m, 'echo new > g/new.txt');
    await m.idle();
    expect(await m.history('g/new.txt')).toHaveLength(1);
    expect((await projectStatus(m)).massDeleteGuard.missing).toBe(80 - deleted.length);

    // A deletion from before the trip is an ordinary tombstone: restorable.
    const first = deleted[0]!;
    const written = (await m.history(first)).find((v) => v.kind === 'write')!;
    await m.api('POST', `/v1/projects/${m.projectId}/history/restore`, { versionId: written.versionId });
    expect((await inMount(m, `cat ${first}`)).stdout).toBe(`file ${first.slice(3, -4)}\n`);

    // Still tripped after a restart.
    expect(await m.stop()).toBe(0);
    m = await mountProject({ root, env: { STRATA_GUARD_YOUNG_MS: '0' } });
    expect((await projectStatus(m)).state).toBe('guarded');
    expect((await tryInMount(m, 'rm g/f79.txt')).stderr).toMatch(/Operation not permitted/);

    // The user looked: reset, and the deletions go through (tombstones).
    const reset = await m.api<ProjectStatus>('POST', `/v1/daemon/projects/${m.projectId}/guard/reset`, {});
    expect(reset.massDeleteGuard.tripped).toBe(false);
    await inMount(m, 'rm -f g/f*.txt && rmdir e');
    await m.idle();
    expect((await inMount(m, 'ls g')).stdout.trim()).toBe('new.txt');
    expect((await m.history('g/f79.txt'))[0]!.kind).toBe('delete');
    expect((await projectStatus(m)).state).toBe('mounted');
  });
});
