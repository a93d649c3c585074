// A file made on a mount whose path the project's tree refuses (a directory there now, made
// elsewhere): kept as a conflict copy (reconciler.ts keepAsConflictCopy), and the mount then shows
// the project's directory. The mount's own `rm -r c; echo v > c` may be refused too while its
// removals are being recorded, and must never be taken for a change from elsewhere (a check that the
// rule does not misfire: that race did not show here even without the guards against it).
import { type FileHandle, open, readdir, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject, waitFor } from './mount-harness.js';

let m: MountedDir;

beforeAll(async () => {
  m = await mountProject();
  // Enough files that the removals below stay under the mass-delete guard's share (capture/guard.ts).
  await inMount(m, 'mkdir keep && for i in $(seq 1 2000); do echo $i > keep/f$i; done');
  await m.idle(60_000);
}, 120_000);

afterAll(async () => {
  await m?.dispose();
});

async function rootNames(): Promise<string[]> {
  const listing = await m.api<{ items: Array<{ name: string }> }>('GET', `/v1/projects/${m.projectId}/fs/dir?path=`);
  return listing.items.map((item) => item.name);
}

/** Waits for the engine's conflict copies of `name` in the root (the mount's release of a closed file may come late under load). */
async function copiesOf(name: string): Promise<string[]> {
  const pattern = new RegExp(`^${name} \\(conflict .+\\)$`);
  const copies = await waitFor(`a conflict copy of ${name}`, async () => {
    const found = (await rootNames()).filter((entry) => pattern.test(entry));
    return found.length > 0 ? found : undefined;
  }, 60_000);
  await m.idle(60_000);
  return copies;
}

describe('a file the project refuses at its path on a mount', () => {
  it("is the mount's own `rm -r c; echo v > c`: versioned at its path, no conflict copy", { timeout: 120_000 }, async () => {
    // One busy burst (300 removals and the write in one batch of captures).
    for (let round = 0; round < 1; round++) {
      await inMount(m, `mkdir -p c${round}/d && for i in $(seq 1 150); do echo $i > c${round}/f$i; echo $i > c${round}/d/g$i; done`);
      await m.idle();
      await inMount(m, `rm -r c${round} && echo v > c${round}`);
      await waitFor(`c${round} versioned`, async () => ((await m.stat(`c${round}`)) === null ? undefined : true), 60_000);
      await m.idle(60_000);
      expect((await m.read(`c${round}`)).toString()).toBe('v\n');
    }
    expect((await rootNames()).filter((name) => name.includes(' (conflict '))).toEqual([]);
  });

  it('made elsewhere while the file was open: kept as a conflict copy, and the directory shows', { timeout: 120_000 }, async () => {
    await inMount(m, 'mkdir e && echo old > e/a');
    await m.idle();
    await inMount(m, 'rm -r e');
    let file: FileHandle | null = await open(join(m.dir, 'e'), 'w');
    try {
      await file.writeFile('mine\n');
      await m.api('PUT', `/v1/projects/${m.projectId}/fs/write?path=e%2Fx`, 'from elsewhere');
      await file.close();
      file = null;
    } finally {
      await file?.close();
    }
    const copies = await copiesOf('e');
    expect(copies).toHaveLength(1);
    expect((await m.read(copies[0]!)).toString()).toBe('mine\n');
    expect(await readdir(join(m.dir, 'e'))).toEqual(['x']);
    expect(await readFile(join(m.dir, copies[0]!), 'utf8')).toBe('mine\n');
  });
  it('renamed onto a name where a directory came from elsewhere: the file goes to a conflict copy, not back to its old name', { timeout: 120_000 }, async () => {
    await inMount(m, 'echo moved > r');
    await m.idle();
    // Open for writing (nothing written), the file's rename is recorded only once it is closed.
    let file: FileHandle | null = await open(join(m.dir, 'r'), 'a');
    try {
      await rename(join(m.dir, 'r'), join(m.dir, 'g'));
      await m.api('PUT', `/v1/projects/${m.projectId}/fs/write?path=g%2Fx`, 'from elsewhere');
      await file.close();
      file = null;
    } finally {
      await file?.close();
    }
    const copies = await copiesOf('g');
    expect(copies).toHaveLength(1);
    const names = await rootNames();
    expect((await m.read(copies[0]!)).toString()).toBe('moved\n');
    expect(names).not.toContain('r');
    expect(await m.stat('r')).toBeNull();
    expect(await readdir(join(m.dir, 'g'))).toEqual(['x']);
    expect((await readdir(m.dir)).filter((name) => name === 'r' || name.startsWith('g'))).toEqual(['g', copies[0]]);
  });
});
