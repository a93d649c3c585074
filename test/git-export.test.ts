// GET fs/snapshots/{id}/git-export end to end with the real git binary: the stream imports with
// `git fast-import`, `git fsck --strict` is clean, one commit per snapshot with the content of that
// snapshot at every commit, tags as git tags, datasets as their manifest text, and the same chain
// always gives the same commit ids (an older snapshot's export is a prefix).
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openHarness, type Harness } from './control-api-harness.js';
import { git } from './helpers/git.js';
import { tempDir } from './helpers/world.js';

describe('git export', () => {
  let h: Harness;
  let dir: { path: string; cleanup: () => Promise<void> };
  let projectId: string;
  beforeEach(async () => {
    h = await openHarness();
    dir = await tempDir('strata-git-export-');
    projectId = await h.createProject('export');
  });
  afterEach(async () => {
    await h.dispose();
    await dir.cleanup();
  });

  const p = (suffix: string) => `/v1/projects/${projectId}${suffix}`;
  const put = (path: string, body: string | Buffer, executable = false) =>
    h.ok('PUT', p(`/fs/write?path=${encodeURIComponent(path)}${executable ? '&executable=true' : ''}`), { body: typeof body === 'string' ? Buffer.from(body) : body, status: 201 });
  const snapshot = (message: string) => h.ok<{ snapshotId: string }>('POST', p('/fs/snapshots'), { body: { message }, status: 201 });

  async function exportInto(snapshotId: string, name: string): Promise<string> {
    const response = await h.request('GET', p(`/fs/snapshots/${snapshotId}/git-export`));
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/octet-stream');
    const repo = join(dir.path, name);
    await mkdir(repo);
    await git(repo, dir.path, ['init', '--bare', '-q']);
    await git(repo, dir.path, ['fast-import', '--quiet'], response.rawPayload);
    await git(repo, dir.path, ['fsck', '--strict', '--no-progress']);
    return repo;
  }
  const show = async (repo: string, rev: string) => (await git(repo, dir.path, ['show', rev])).toString('latin1');

  it('exports one commit per snapshot with exact contents, modes, tags and dataset manifests', async () => {
    await put('src/fit.m', 'x = 1;\n');
    await put('run.sh', '#!/bin/sh\necho hi\n', true);
    await put('notes with space.txt', 'ü\n');
    const s1 = await snapshot('first');
    await h.ok('POST', p(`/fs/snapshots/${s1.snapshotId}/tags`), { body: { tag: 'v1' }, status: 201 });
    await put('src/fit.m', 'x = 2;\n');
    await h.ok('POST', p('/fs/delete'), { body: { path: 'notes with space.txt' } });
    await h.ok('POST', p('/fs/datasets/track'), { body: { pattern: 'data/*.bin' } });
    const data = randomBytes(3 * 1024 * 1024);
    await put('data/a.bin', data);
    const s2 = await snapshot('second');
    await put('src/fit.m', 'x = 3;\n');
    const s3 = await snapshot('third: no trailing newline');

    const repo = await exportInto(s3.snapshotId, 'full');
    const log = (await git(repo, dir.path, ['log', '--format=%H %an <%ae> %at %s', 'main'])).toString().trim().split('\n');
    expect(log).toHaveLength(3);
    expect(log.map((l) => l.split(' ').slice(-1)[0])).toEqual(['newline', 'second', 'first']);
    expect(await show(repo, 'main~2:src/fit.m')).toBe('x = 1;\n');
    expect(await show(repo, 'main~1:src/fit.m')).toBe('x = 2;\n');
    expect(await show(repo, 'main:src/fit.m')).toBe('x = 3;\n');
    expect(Buffer.from(await show(repo, 'main~2:notes with space.txt'), 'latin1').toString('utf8')).toBe('ü\n');
    await expect(git(repo, dir.path, ['cat-file', '-e', 'main~1:notes with space.txt'])).rejects.toThrow();
    const tree = (await git(repo, dir.path, ['ls-tree', '-r', 'main'])).toString();
    expect(tree).toMatch(/^100755 blob \S+\trun\.sh$/m);
    expect(tree).toMatch(/^100644 blob \S+\tsrc\/fit\.m$/m);
    // the dataset is its manifest text
    const manifest = JSON.parse(await show(repo, 'main:data/a.bin')) as { format: string; size: number };
    expect(manifest).toMatchObject({ format: 'strata.dataset/1', size: data.length });
    expect((await git(repo, dir.path, ['rev-parse', 'v1^{commit}'])).toString()).toBe((await git(repo, dir.path, ['rev-parse', 'main~2'])).toString());

    // deterministic, and an older snapshot exports to a prefix of the chain
    const again = await exportInto(s3.snapshotId, 'again');
    expect((await git(again, dir.path, ['rev-parse', 'main'])).toString()).toBe((await git(repo, dir.path, ['rev-parse', 'main'])).toString());
    const older = await exportInto(s2.snapshotId, 'older');
    expect((await git(older, dir.path, ['rev-parse', 'main'])).toString()).toBe((await git(repo, dir.path, ['rev-parse', 'main~1'])).toString());
    // by tag
    const byTag = await h.request('GET', p('/fs/snapshots/v1/git-export'));
    expect(byTag.statusCode).toBe(200);
  });

  it('names the chain with the commit ids git computes, and uploads only what a client lacks', async () => {
    const empty = await h.ok<{ head: unknown; tags: unknown[] }>('GET', p('/fs/git/refs'));
    expect(empty).toMatchObject({ ref: 'refs/heads/main', head: null, tags: [] });
    await put('a/b/c.txt', 'c');
    await put('a/x.txt', 'x');
    await put('z.sh', '#!/bin/sh\n', true);
    const s1 = await snapshot('one');
    await h.ok('POST', p(`/fs/snapshots/${s1.snapshotId}/tags`), { body: { tag: 'first' }, status: 201 });
    await h.ok('POST', p('/fs/delete'), { body: { path: 'a/b/c.txt' } });
    await put('a.txt', 'file named like a directory');
    await snapshot('two');
    await put('a/x.txt', 'x2');
    const s3 = await snapshot('three');

    const full = await exportInto(s3.snapshotId, 'full');
    const refs = await h.ok<{ head: { snapshotId: string; commitId: string }; tags: Array<{ tag: string; commitId: string }> }>('GET', p('/fs/git/refs'));
    const revParse = async (repo: string, rev: string) => (await git(repo, dir.path, ['rev-parse', rev])).toString().trim();
    expect(refs.head).toMatchObject({ snapshotId: s3.snapshotId, commitId: await revParse(full, 'main') });
    expect(refs.tags).toEqual([{ tag: 'first', snapshotId: s1.snapshotId, commitId: await revParse(full, 'main~2') }]);

    // a client with the first commit gets only the two that follow, continuing from its commit
    const older = await exportInto(s1.snapshotId, 'older');
    const upload = await h.request('GET', p(`/fs/git/upload?have=${await revParse(older, 'main')}`));
    expect(upload.statusCode).toBe(200);
    await git(older, dir.path, ['fast-import', '--quiet'], upload.rawPayload);
    await git(older, dir.path, ['fsck', '--strict', '--no-progress']);
    expect(await revParse(older, 'main')).toBe(refs.head.commitId);
    expect(upload.rawPayload.length).toBeLessThan((await h.request('GET', p('/fs/git/upload'))).rawPayload.length);
    // up to date: nothing to send; an unknown commit: the histories diverged
    const none = await h.request('GET', p(`/fs/git/upload?have=${refs.head.commitId}`));
    expect(none.body).toBe('feature done\ndone\n');
    const unknown = await h.request('GET', p(`/fs/git/upload?have=${'0'.repeat(40)}`));
    expect(unknown.statusCode).toBe(409);
    expect(JSON.parse(unknown.body).error.code).toBe('GIT_UNKNOWN_COMMIT');
    const bad = await h.request('GET', p('/fs/git/upload?have=xyz'));
    expect(bad.statusCode).toBe(400);
  });

  it('answers 404 for an unknown snapshot and 401 without a key', async () => {
    await put('a.txt', 'a');
    await snapshot('one');
    const missing = await h.request('GET', p('/fs/snapshots/01936f2a-0001-7000-8000-000000000099/git-export'));
    expect(missing.statusCode).toBe(404);
    const anonymous = await h.request('GET', p('/fs/snapshots/01936f2a-0001-7000-8000-000000000099/git-export'), { key: null });
    expect(anonymous.statusCode).toBe(401);
  });
});
