// Symbolic links in git (issue 15): export writes a link as mode 120000 with its target as the blob,
// exactly what git stores for one; receive turns mode 120000 into a link version. The real git binary
// checks both ways: a checkout of the export has real links (readlink shows the targets), and a commit
// made in git with `ln -s` comes back out of Strata with the very same commit id.
import { mkdir, readlink, lstat, symlink, writeFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ExportCommit, writeFastImport } from '../engine/git/fast-import-writer.js';
import { openHarness, type Harness } from './control-api-harness.js';
import { git } from './helpers/git.js';
import { tempDir } from './helpers/world.js';

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<string> {
  const out: Buffer[] = [];
  for await (const chunk of chunks) out.push(Buffer.from(chunk));
  return Buffer.concat(out).toString('latin1');
}

describe('fast-import writer: mode 120000', () => {
  const contents: Record<string, Buffer> = { 'blake3:a': Buffer.from('hello\n'), 'blake3:b': Buffer.from('#!/bin/sh\n'), 'blake3:c': Buffer.from('target') };
  const chain = (linkFlag: boolean): ExportCommit[] => [
    {
      message: 'one',
      actor: { name: 'Ada', email: 'ada@strata' },
      timeMs: 1_700_000_000_000,
      tags: ['v1'],
      changes: [
        { kind: 'modify', path: 'a.txt', contentHash: 'blake3:a', size: 6, executable: false },
        { kind: 'modify', path: 'bin/run', contentHash: 'blake3:b', size: 10, executable: true },
        { kind: 'modify', path: 'link', contentHash: 'blake3:c', size: 6, executable: false, ...(linkFlag ? { symlink: true } : {}) },
      ],
    },
    { message: 'two', actor: { name: 'Ada', email: 'ada@strata' }, timeMs: 1_700_000_100_000, tags: [], changes: [{ kind: 'delete', path: 'a.txt' }] },
  ];
  // What the writer produced for this chain before links existed (the code at 3b958b5, run on the
  // same input): a chain without links must keep exporting these very bytes, so its commit ids stay.
  const before = [
    'feature done',
    'blob\nmark :1\ndata 6\nhello\n',
    'blob\nmark :2\ndata 10\n#!/bin/sh\n',
    'blob\nmark :3\ndata 6\ntarget',
    'commit refs/heads/main\nmark :4\nauthor Ada <ada@strata> 1700000000 +0000\ncommitter Ada <ada@strata> 1700000000 +0000\ndata 3\none',
    'M 100644 :1 a.txt\nM 100755 :2 bin/run\nM 100644 :3 link\n',
    'reset refs/tags/v1\nfrom :4\n',
    'commit refs/heads/main\nmark :5\nauthor Ada <ada@strata> 1700000100 +0000\ncommitter Ada <ada@strata> 1700000100 +0000\ndata 3\ntwo\nfrom :4\nD a.txt\n',
    'done\n',
  ].join('\n');

  it('writes a chain without links byte for byte as before, and a link as M 120000 (exec bit ignored)', async () => {
    const openContent = (hash: string) => [contents[hash]!];
    expect(await collect(writeFastImport(chain(false), { openContent }))).toBe(before);
    const withLink = await collect(writeFastImport(chain(true), { openContent }));
    expect(withLink).toBe(before.replace('M 100644 :3 link', 'M 120000 :3 link'));
    const executableLink = chain(true);
    (executableLink[0]!.changes[2] as { executable: boolean }).executable = true;
    expect(await collect(writeFastImport(executableLink, { openContent }))).toBe(withLink);
  });
});

describe('git export and receive of symbolic links', () => {
  let h: Harness;
  let dir: { path: string; cleanup: () => Promise<void> };
  let projectId: string;
  beforeEach(async () => {
    h = await openHarness();
    dir = await tempDir('strata-git-links-');
    projectId = await h.createProject('links');
  });
  afterEach(async () => {
    await h.dispose();
    await dir.cleanup();
  });

  const p = (suffix: string) => `/v1/projects/${projectId}${suffix}`;
  const put = (path: string, body: string, flags = '') => h.ok('PUT', p(`/fs/write?path=${encodeURIComponent(path)}${flags}`), { body: Buffer.from(body), status: 201 });
  const snapshot = (message: string) => h.ok<{ snapshotId: string }>('POST', p('/fs/snapshots'), { body: { message }, status: 201 });
  const gitIn = (cwd: string, args: string[], input?: Uint8Array) => git(cwd, dir.path, args, input);
  const revParse = async (repo: string, rev: string) => (await gitIn(repo, ['rev-parse', rev])).toString().trim();

  async function exportInto(snapshotId: string, name: string): Promise<{ repo: string; stream: Buffer }> {
    const response = await h.request('GET', p(`/fs/snapshots/${snapshotId}/git-export`));
    expect(response.statusCode).toBe(200);
    const repo = join(dir.path, name);
    await mkdir(repo);
    await gitIn(repo, ['init', '--bare', '-q']);
    await gitIn(repo, ['fast-import', '--quiet'], response.rawPayload);
    await gitIn(repo, ['fsck', '--strict', '--no-progress']);
    return { repo, stream: response.rawPayload };
  }

  it('exports links as mode 120000; a checkout has real links with the exact targets; the ids are the ones git computes', async () => {
    await put('data/run1.csv', 'a,b\n');
    await put('latest', 'data/run1.csv', '&symlink=true');
    await put('scratch', '/scratch/user/run1', '&symlink=true');
    await put('dangling', 'nowhere/at/all', '&symlink=true');
    await put('was-file', 'x.txt');
    const s1 = await snapshot('with links');
    // a file becomes a link (same bytes), a link becomes a file, a link moves to another target
    await put('was-file', 'x.txt', '&symlink=true');
    await put('dangling', 'now a file\n');
    await put('latest', 'data/run2.csv', '&symlink=true');
    const s2 = await snapshot('links changed');

    const { repo, stream } = await exportInto(s2.snapshotId, 'bare');
    const tree = (await gitIn(repo, ['ls-tree', '-r', 'main'])).toString();
    expect(tree).toMatch(/^120000 blob \S+\tlatest$/m);
    expect(tree).toMatch(/^120000 blob \S+\tscratch$/m);
    expect(tree).toMatch(/^120000 blob \S+\twas-file$/m);
    expect(tree).toMatch(/^100644 blob \S+\tdangling$/m);
    expect(tree).toMatch(/^100644 blob \S+\tdata\/run1\.csv$/m);
    const first = (await gitIn(repo, ['ls-tree', '-r', 'main~1'])).toString();
    expect(first).toMatch(/^120000 blob \S+\tdangling$/m);
    expect(first).toMatch(/^100644 blob \S+\twas-file$/m);
    expect((await gitIn(repo, ['cat-file', 'blob', 'main:latest'])).toString()).toBe('data/run2.csv');

    const work = join(dir.path, 'work');
    await gitIn(dir.path, ['clone', '-q', repo, work]);
    expect(await readlink(join(work, 'latest'))).toBe('data/run2.csv');
    expect(await readlink(join(work, 'scratch'))).toBe('/scratch/user/run1');
    expect(await readlink(join(work, 'was-file'))).toBe('x.txt');
    expect((await lstat(join(work, 'dangling'))).isFile()).toBe(true);
    await gitIn(work, ['checkout', '-q', 'HEAD~1']);
    expect(await readlink(join(work, 'dangling'))).toBe('nowhere/at/all');
    expect(await readlink(join(work, 'latest'))).toBe('data/run1.csv');
    expect((await lstat(join(work, 'was-file'))).isFile()).toBe(true);

    // Strata names the chain as git does (object-ids.ts handles mode 120000), and exports it the same way twice.
    const refs = await h.ok<{ head: { commitId: string } }>('GET', p('/fs/git/refs'));
    expect(refs.head.commitId).toBe(await revParse(repo, 'main'));
    const again = await exportInto(s2.snapshotId, 'again');
    expect(again.stream.equals(stream)).toBe(true);
    const older = await exportInto(s1.snapshotId, 'older');
    expect(await revParse(older.repo, 'main')).toBe(await revParse(repo, 'main~1'));
  });

  it('receives links made in git with ln -s as link versions, and exports them back to the same commit ids', async () => {
    const work = join(dir.path, 'src');
    await mkdir(work);
    await gitIn(work, ['init', '-q']);
    await writeFile(join(work, 'notes.txt'), 'notes\n');
    await symlink('notes.txt', join(work, 'readme'));
    await symlink('../outside/dir', join(work, 'out'));
    await writeFile(join(work, 'plain'), 'notes.txt');
    await gitIn(work, ['add', '-A']);
    await gitIn(work, ['commit', '-q', '-m', 'links from git']);
    // then: the plain file becomes a link to the same bytes, and a link becomes a file
    await unlink(join(work, 'plain'));
    await symlink('notes.txt', join(work, 'plain'));
    await unlink(join(work, 'out'));
    await writeFile(join(work, 'out'), 'a file now\n');
    await gitIn(work, ['add', '-A']);
    await gitIn(work, ['commit', '-q', '-m', 'swap']);

    const stream = await gitIn(work, ['fast-export', '--use-done-feature', '--show-original-ids', 'main']);
    const received = await h.request('POST', p('/fs/git/receive'), { payload: stream, headers: { 'content-type': 'application/octet-stream' } });
    expect(received.statusCode, received.body).toBe(200);
    const result = received.json() as { applied: Array<{ commitId: string }> };
    expect(result.applied.map((a) => a.commitId)).toEqual([await revParse(work, 'main~1'), await revParse(work, 'main')]);

    const stat = (path: string) => h.ok<{ symlink: boolean; size: number }>('GET', p(`/fs/stat?path=${path}`));
    expect(await stat('readme')).toMatchObject({ symlink: true, size: 9 });
    expect(await stat('plain')).toMatchObject({ symlink: true });
    expect(await stat('out')).toMatchObject({ symlink: false });
    expect(await stat('notes.txt')).toMatchObject({ symlink: false });
    const read = await h.request('GET', p('/fs/read?path=readme'));
    expect(read.body).toBe('notes.txt');
    expect(read.headers['x-strata-symlink']).toBe('true');
    const history = await h.ok<{ items: Array<{ kind: string; symlink: boolean }> }>('GET', p('/history?path=out'));
    expect(history.items.map((v) => [v.kind, v.symlink])).toEqual([
      ['import', false],
      ['import', true],
    ]);
    const plainHistory = await h.ok<{ items: Array<{ symlink: boolean; contentHash: string }> }>('GET', p('/history?path=plain'));
    expect(plainHistory.items.map((v) => v.symlink)).toEqual([true, false]);
    expect(plainHistory.items[0]!.contentHash).toBe(plainHistory.items[1]!.contentHash);

    // Out again: the same commits, ids and all.
    const refs = await h.ok<{ head: { snapshotId: string; commitId: string } }>('GET', p('/fs/git/refs'));
    expect(refs.head.commitId).toBe(await revParse(work, 'main'));
    const { repo } = await exportInto(refs.head.snapshotId, 'back');
    expect(await revParse(repo, 'main')).toBe(await revParse(work, 'main'));
    // Sending the same stream again changes nothing.
    const again = await h.request('POST', p('/fs/git/receive'), { payload: stream, headers: { 'content-type': 'application/octet-stream' } });
    expect(again.json()).toMatchObject({ applied: [], alreadyPresent: 2 });
  });

  it('refuses a link whose target no filesystem can hold (empty, NUL), and applies nothing of the push', async () => {
    for (const [data, reason] of [
      ['data 0\n', 'empty'],
      ['data 3\na\0b\n', 'NUL byte'],
    ] as const) {
      const stream = [
        'feature done',
        'blob',
        'mark :1',
        'data 2',
        'ok',
        'commit refs/heads/main',
        'mark :2',
        'author A <a@x> 1700000000 +0000',
        'committer A <a@x> 1700000000 +0000',
        'data 3',
        'one',
        'M 100644 :1 fine.txt',
        'M 120000 inline bad-link',
        `${data}done`,
        '',
      ].join('\n');
      const response = await h.request('POST', p('/fs/git/receive'), { payload: Buffer.from(stream, 'latin1'), headers: { 'content-type': 'application/octet-stream' } });
      expect(response.statusCode, response.body).toBe(422);
      const { error } = response.json() as { error: { code: string; message: string; details: Record<string, unknown> } };
      expect(error).toMatchObject({ code: 'GIT_NOT_REPRESENTABLE', details: { path: '"bad-link"', reason } });
      expect(error.message).toContain('symbolic link');
      const listing = await h.ok<{ items: unknown[] }>('GET', p('/fs/snapshots'));
      expect(listing.items).toEqual([]);
      const fine = await h.request('GET', p('/fs/stat?path=fine.txt'));
      expect(fine.statusCode).toBe(404);
    }
  });
});
