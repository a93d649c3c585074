// A round of bringing changes to disk opens each directory once for all its paths (open-dirs.ts;
// issue 38: a clone of 5,000 files opened each file's directories three times per file), still
// never through a link, and a directory the round removes is opened afresh, not written through.
import { mkdir, mkdtemp, readdir, rm, rmdir, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OpenDirs } from '../daemon/watch/open-dirs.js';

const openFds = async () => (await readdir('/proc/self/fd')).length;

describe('OpenDirs: the directories of one round, opened once', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-open-dirs-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('200 paths in two directories open each directory once, and close leaves no descriptor open', { timeout: 20_000 }, async () => {
    const before = await openFds();
    const dirs = new OpenDirs(root);
    await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        dirs.use(i % 2 === 0 ? 'a/b' : 'c', { create: true }, async (beneath) => {
          expect(beneath.kind).toBe('dir');
          if (beneath.kind === 'dir') await writeFile(beneath.dir.entry(`f${i}`), String(i));
        }),
      ),
    );
    expect(dirs.opened).toBe(2);
    expect((await readdir(join(root, 'a', 'b'))).length).toBe(100);
    expect((await readdir(join(root, 'c'))).length).toBe(100);
    await dirs.close();
    expect(await openFds()).toBe(before);
  });

  it('a link where a directory should be is refused, not kept: once a real directory stands there it is used', { timeout: 20_000 }, async () => {
    const outside = await mkdtemp(join(tmpdir(), 'strata-open-dirs-outside-'));
    try {
      await symlink(outside, join(root, 'l'));
      const dirs = new OpenDirs(root);
      expect(await dirs.use('l', { create: true }, async (beneath) => beneath.kind)).toBe('link');
      await rm(join(root, 'l'));
      await mkdir(join(root, 'l'));
      expect(await dirs.use('l', { create: true }, async (beneath) => beneath.kind)).toBe('dir');
      await dirs.close();
      expect(await readdir(outside)).toEqual([]);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('after the round removes a directory, the next path opens (and makes) it again instead of writing into the removed one', { timeout: 20_000 }, async () => {
    const before = await openFds();
    const dirs = new OpenDirs(root);
    await dirs.use('d', { create: true }, async () => undefined);
    await rmdir(join(root, 'd'));
    dirs.removedDirectories();
    await dirs.use('d', { create: true }, async (beneath) => {
      if (beneath.kind !== 'dir') throw new Error(`not a directory: ${beneath.kind}`);
      await writeFile(beneath.dir.entry('f'), 'x');
    });
    expect(dirs.opened).toBe(2);
    expect(await readdir(join(root, 'd'))).toEqual(['f']);
    await dirs.close();
    expect(await openFds()).toBe(before);
  });

  it('a tree of many directories keeps a bounded number open', { timeout: 20_000 }, async () => {
    const before = await openFds();
    const dirs = new OpenDirs(root);
    let most = 0;
    for (let i = 0; i < 300; i++) {
      await dirs.use(`d${i}`, { create: true }, async () => undefined);
      most = Math.max(most, (await openFds()) - before);
    }
    expect(most).toBeLessThanOrEqual(70);
    await dirs.close();
    expect(await openFds()).toBe(before);
  });
});
