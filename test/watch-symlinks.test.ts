// Watch mode versions symbolic links as links (issue 15): lstat and readlink, never followed, whether
// a link points inside the project, outside it, nowhere or at itself. Replacing a link by a file or a
// file by a link is a version. Bringing the project to disk (restores) makes real links, atomically,
// and a file that replaces a link replaces the link itself. Nothing is ever written through a link:
// not when a directory of the project was replaced by a link to somewhere outside it.
import { lstat, mkdir, readdir, readFile, readlink, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openNoFollow } from '../daemon/capture/open-no-follow.js';
import { openBeneath } from '../daemon/beneath.js';
import { openLocalEngine } from '../engine/local.js';
import type { Entry, VersionRecord } from '../engine/types.js';
import { sh, waitFor, type WatchedProject, watchProject } from './daemon-harness.js';
import { tempDir } from './helpers/world.js';

const isLink = (path: string) => lstat(path).then(
  (st) => st.isSymbolicLink(),
  () => false,
);

describe('watch mode versions symbolic links as links', () => {
  let w: WatchedProject;
  let outside: string;
  beforeAll(async () => {
    w = await watchProject({
      prepare: async (dir) => {
        outside = join(dir, '..', 'scratch');
        await mkdir(join(outside, 'run1'), { recursive: true });
        await writeFile(join(outside, 'run1', 'big.dat'), 'outside the project\n');
        await writeFile(join(outside, 'target.txt'), 'OUTSIDE\n');
        await writeFile(join(dir, 'notes.txt'), 'notes\n');
        await symlink(join(outside, 'run1'), join(dir, 'data'));
        await symlink('notes.txt', join(dir, 'notes-link.txt'));
        await symlink('nowhere/at/all', join(dir, 'dangling'));
        await mkdir(join(dir, 'sub'));
        await symlink('..', join(dir, 'sub', 'loop'));
        await symlink('self', join(dir, 'self'));
      },
    });
  });
  afterAll(async () => {
    await w?.dispose();
  });

  const current = async (path: string) => (await w.history(path))[0];
  const versionedAs = (path: string, check: (v: VersionRecord) => boolean, what: string) =>
    waitFor(`${path}: ${what}`, async () => {
      const v = await current(path);
      return v !== undefined && check(v) ? v : undefined;
    }, 20_000);

  it('the initial scan versions every link as a link with its exact target, and follows none', async () => {
    await w.idle();
    const tree = await w.tree();
    expect([...tree.keys()].sort()).toEqual(['dangling', 'data', 'notes-link.txt', 'notes.txt', 'self', 'sub/loop']);
    const flags = Object.fromEntries([...tree].map(([path, entry]) => [path, entry.symlink]));
    expect(flags).toEqual({ dangling: true, data: true, 'notes-link.txt': true, 'notes.txt': false, self: true, 'sub/loop': true });
    expect(await w.read('data')).toBe(join(outside, 'run1'));
    expect(await w.read('notes-link.txt')).toBe('notes.txt');
    expect(await w.read('dangling')).toBe('nowhere/at/all');
    expect(await w.read('sub/loop')).toBe('..');
    expect(tree.get('notes-link.txt')).toMatchObject({ size: 9, executable: false, dataset: false });
    // No warning about links any more: they are versioned.
    expect((await w.status()).warnings.filter((warning) => warning.includes('link'))).toEqual([]);
  });

  it('ln -s, a new target, a link replaced by a file and a file by a link: each is a version; rm is a tombstone', async () => {
    const cfg = join(w.dir, 'cfg');
    await symlink('notes.txt', cfg);
    const first = await versionedAs('cfg', (v) => v.symlink, 'a link');
    expect(await w.read('cfg')).toBe('notes.txt');
    await sh('ln', ['-sfn', 'other.txt', cfg]);
    await versionedAs('cfg', (v) => v.symlink && v.size === 9 && v.versionId !== first.versionId, 'the new target');
    expect(await w.read('cfg')).toBe('other.txt');
    // the same bytes as a regular file: a change of kind, so a version
    await unlink(cfg);
    await writeFile(cfg, 'other.txt');
    const asFile = await versionedAs('cfg', (v) => !v.symlink, 'a file');
    expect(asFile.contentHash).toBe((await w.history('cfg'))[1]!.contentHash);
    await unlink(cfg);
    await symlink('other.txt', cfg);
    await versionedAs('cfg', (v) => v.symlink, 'a link again');
    await unlink(cfg);
    await versionedAs('cfg', (v) => v.contentHash === null, 'deleted');
    // (an unlink and a create within one settle delay are one change; a slow machine may record the unlink too)
    const history = (await w.history('cfg')).filter((v, i) => i === 0 || v.kind !== 'delete');
    expect(history.map((v) => [v.kind, v.symlink])).toEqual([
      ['delete', false],
      ['write', true],
      ['write', false],
      ['write', true],
      ['write', true],
    ]);
  });

  it('tar x of an archive with links versions them as links; what they point to is never read through them', async () => {
    const src = join(w.dir, '..', 'tar-src');
    await mkdir(join(src, 'a'), { recursive: true });
    await mkdir(join(src, 'b'), { recursive: true });
    await writeFile(join(src, 'a', 'x.txt'), 'x\n');
    await writeFile(join(src, 'b', 'inside.txt'), 'inside b\n');
    await symlink('x.txt', join(src, 'a', 'link'));
    await symlink('/etc/hostname', join(src, 'a', 'abs'));
    await symlink('../b', join(src, 'a', 'dirlink'));
    await symlink(join(outside, 'target.txt'), join(src, 'a', 'out'));
    const archive = join(w.dir, '..', 'links.tar');
    await sh('tar', ['cf', archive, '-C', src, '.']);
    await mkdir(join(w.dir, 'unpacked'));
    await sh('tar', ['xf', archive, '-C', join(w.dir, 'unpacked')]);
    expect(await isLink(join(w.dir, 'unpacked', 'a', 'dirlink'))).toBe(true);

    const expected = ['unpacked/a/abs', 'unpacked/a/dirlink', 'unpacked/a/link', 'unpacked/a/out', 'unpacked/a/x.txt', 'unpacked/b/inside.txt'];
    const tree = await waitFor('the archive versioned', async () => {
      const t = await w.tree();
      const got = [...t.keys()].filter((path) => path.startsWith('unpacked/')).sort();
      return JSON.stringify(got) === JSON.stringify(expected) ? t : undefined;
    }, 20_000);
    const kinds = Object.fromEntries(expected.map((path) => [path, (tree.get(path) as Entry).symlink]));
    expect(kinds).toEqual({
      'unpacked/a/abs': true,
      'unpacked/a/dirlink': true,
      'unpacked/a/link': true,
      'unpacked/a/out': true,
      'unpacked/a/x.txt': false,
      'unpacked/b/inside.txt': false,
    });
    expect(await w.read('unpacked/a/abs')).toBe('/etc/hostname');
    expect(await w.read('unpacked/a/dirlink')).toBe('../b');
    expect(await w.read('unpacked/a/out')).toBe(join(outside, 'target.txt'));
  });

  it('a restore writes a link as a link; a file restored over a link replaces the link, never its target; a snapshot restore too', async () => {
    const m = join(w.dir, 'm');
    const target = join(outside, 'target.txt');
    await symlink(target, m);
    const link = await versionedAs('m', (v) => v.symlink, 'a link');
    await unlink(m);
    await writeFile(m, 'file content\n');
    const file = await versionedAs('m', (v) => !v.symlink && v.contentHash !== null, 'a file');
    const before = (await w.history('m')).length;

    await w.api('POST', `/v1/projects/${w.projectId}/history/restore`, { versionId: link.versionId });
    await waitFor('m is a link on disk', async () => ((await isLink(m)) ? true : undefined), 20_000);
    expect(await readlink(m)).toBe(target);

    await w.api('POST', `/v1/projects/${w.projectId}/history/restore`, { versionId: file.versionId });
    await waitFor('m is a file on disk', async () => ((await lstat(m)).isFile() ? true : undefined), 20_000);
    expect(await readFile(m, 'utf8')).toBe('file content\n');
    expect(await readFile(target, 'utf8')).toBe('OUTSIDE\n');

    // what the restores wrote is not captured again: only the two restore versions were added
    await w.idle();
    const history = await w.history('m');
    expect(history.length).toBe(before + 2);
    expect(history.slice(0, 2).map((v) => [v.kind, v.symlink])).toEqual([
      ['restore', false],
      ['restore', true],
    ]);

    // a snapshot with m as a link, then m a file again, then the snapshot restored
    await w.api('POST', `/v1/projects/${w.projectId}/history/restore`, { versionId: link.versionId });
    await waitFor('m is a link on disk', async () => ((await isLink(m)) ? true : undefined), 20_000);
    const snapshot = await w.api<{ snapshotId: string }>('POST', `/v1/projects/${w.projectId}/fs/snapshots`, { message: 'm is a link' });
    await unlink(m);
    await writeFile(m, 'edited\n');
    await versionedAs('m', (v) => !v.symlink && v.size === 7, 'edited as a file');
    await w.api('POST', `/v1/projects/${w.projectId}/fs/snapshots/${snapshot.snapshotId}/restore`);
    await waitFor('m is a link on disk again', async () => ((await isLink(m)) ? true : undefined), 20_000);
    expect(await readlink(m)).toBe(target);
    expect(await readFile(target, 'utf8')).toBe('OUTSIDE\n');
    // no temporary link is left behind, and none was versioned
    expect((await readdir(w.dir)).filter((name) => name.startsWith('.strata-incoming-'))).toEqual([]);
    expect([...(await w.tree()).keys()].filter((path) => path.includes('.strata-incoming-'))).toEqual([]);
  });
});

describe('nothing is written through a link that took a directory’s place', () => {
  let w: WatchedProject;
  let outside: string;
  beforeEach(async () => {
    w = await watchProject({
      prepare: async (dir) => {
        outside = join(dir, '..', 'outside');
        await mkdir(outside);
        await writeFile(join(outside, 'secret.txt'), 'SECRET\n');
        await mkdir(join(dir, 'sub'));
        await writeFile(join(dir, 'sub', 'keep.txt'), 'keep\n');
        await mkdir(join(dir, 'sub2'));
        await writeFile(join(dir, 'sub2', 'a.txt'), 'a\n');
      },
    });
    await w.idle();
  });
  afterEach(async () => {
    await w?.dispose();
  });

  const outsideUntouched = async () => {
    expect(await readdir(outside)).toEqual(['secret.txt']);
    expect(await readFile(join(outside, 'secret.txt'), 'utf8')).toBe('SECRET\n');
  };

  it('a link that took its place while the daemon was down is versioned; the files below it are recorded deleted, kept in history, and nothing is written outside', async () => {
    // While the daemon is down, another process changes and adds files below sub/, and sub/ becomes
    // a link to a directory outside the project. The files can never reach the disk (nothing is
    // written through a link): disk and history agree only once their deletion is recorded and the
    // link versioned (issue 38 item 8; this test once expected them kept and a warning forever).
    await w.stop();
    const other = await openLocalEngine({ home: w.home });
    try {
      const actor = { id: 'other-process', kind: 'local' as const, name: 'another process' };
      await other.engine.writeFile({ projectId: w.projectId, path: 'sub/secret.txt', actor, content: Buffer.from('INJECTED\n') });
      await other.engine.writeFile({ projectId: w.projectId, path: 'sub/keep.txt', actor, content: Buffer.from('changed\n') });
    } finally {
      await other.close();
    }
    await rm(join(w.dir, 'sub'), { recursive: true });
    await symlink(outside, join(w.dir, 'sub'));
    await w.restart();

    await waitFor('sub versioned as the link', async () => {
      const tree = await w.tree();
      return tree.get('sub')?.symlink === true && !tree.has('sub/secret.txt') && !tree.has('sub/keep.txt') ? true : undefined;
    }, 30_000);
    await outsideUntouched();
    expect(await readlink(join(w.dir, 'sub'))).toBe(outside);
    // the engine's files below sub/ are still in history: the injected content, then the deletion
    const history = await w.history('sub/secret.txt');
    expect(history.some((version) => version.contentHash !== null)).toBe(true);
    expect(history[0]).toMatchObject({ contentHash: null });
  });

  it('a project directory whose .strata is a link is refused before anything is made, and nothing is written where it points', async () => {
    const other = join(w.dir, '..', 'linked-strata');
    await mkdir(other);
    await symlink(outside, join(other, '.strata'));
    const projects = async () => (await w.api<{ items: unknown[] }>('GET', '/v1/projects')).items.length;
    const before = await projects();
    await expect(w.daemon.addProject({ dir: other, mode: 'watch' })).rejects.toMatchObject({ code: 'PATH_THROUGH_SYMLINK', details: { link: '.strata' } });
    expect(await projects()).toBe(before);
    await outsideUntouched();
  });

  it('a restore that turns the link back into a directory removes the link itself and makes a real directory', async () => {
    const snapshot = await w.api<{ snapshotId: string }>('POST', `/v1/projects/${w.projectId}/fs/snapshots`, { message: 'sub2 is a directory' });
    await rm(join(w.dir, 'sub2'), { recursive: true });
    await symlink(outside, join(w.dir, 'sub2'));
    await waitFor('sub2 versioned as a link', async () => {
      const tree = await w.tree();
      return tree.get('sub2')?.symlink === true && !tree.has('sub2/a.txt') ? true : undefined;
    }, 20_000);
    await w.api('POST', `/v1/projects/${w.projectId}/fs/snapshots/${snapshot.snapshotId}/restore`);
    await waitFor('sub2 a directory again', async () => {
      const st = await lstat(join(w.dir, 'sub2')).catch(() => null);
      return st?.isDirectory() && (await readFile(join(w.dir, 'sub2', 'a.txt'), 'utf8').catch(() => null)) === 'a\n' ? true : undefined;
    }, 20_000);
    await outsideUntouched();
  });
});

describe('the no-follow primitives', () => {
  let dir: { path: string; cleanup: () => Promise<void> };
  beforeEach(async () => {
    dir = await tempDir('strata-beneath-');
    await mkdir(join(dir.path, 'root', 'real'), { recursive: true });
    await mkdir(join(dir.path, 'outside'));
    await writeFile(join(dir.path, 'outside', 'f.txt'), 'outside\n');
    await writeFile(join(dir.path, 'root', 'real', 'f.txt'), 'inside\n');
    await symlink(join(dir.path, 'outside'), join(dir.path, 'root', 'link'));
    await symlink('f.txt', join(dir.path, 'root', 'real', 'flink'));
  });
  afterEach(async () => {
    await dir.cleanup();
  });

  it('openBeneath opens real directories, refuses a link anywhere on the way, and creates nothing through one', async () => {
    const root = join(dir.path, 'root');
    const real = await openBeneath(root, 'real', { create: false });
    expect(real.kind).toBe('dir');
    if (real.kind === 'dir') {
      expect(await readFile(real.dir.entry('f.txt'), 'utf8')).toBe('inside\n');
      expect(() => real.dir.entry('../x')).toThrow(TypeError);
      await real.dir.close();
    }
    expect(await openBeneath(root, 'link', { create: true })).toEqual({ kind: 'link', at: 'link' });
    expect(await openBeneath(root, 'link/deeper/still', { create: true })).toEqual({ kind: 'link', at: 'link' });
    expect(await openBeneath(root, 'real/f.txt/x', { create: true })).toEqual({ kind: 'file', at: 'real/f.txt' });
    expect(await openBeneath(root, 'missing/x', { create: false })).toEqual({ kind: 'missing', at: 'missing' });
    expect(await readdir(join(dir.path, 'outside'))).toEqual(['f.txt']);
    const made = await openBeneath(root, 'new/deep', { create: true });
    expect(made.kind).toBe('dir');
    if (made.kind === 'dir') await made.dir.close();
    expect((await lstat(join(root, 'new', 'deep'))).isDirectory()).toBe(true);
  });

  it('openNoFollow reads a regular file only when no link is on its way', async () => {
    const root = join(dir.path, 'root');
    const opened = await openNoFollow(join(root, 'real', 'f.txt'));
    expect(opened).not.toBeNull();
    expect(await readFile(opened!.path, 'utf8')).toBe('inside\n');
    await opened!.handle.close();
    expect(await openNoFollow(join(root, 'link', 'f.txt'))).toBeNull();
    expect(await openNoFollow(join(root, 'real', 'flink'))).toBeNull();
    expect(await openNoFollow(join(root, 'real', 'gone.txt'))).toBeNull();
  });
});
