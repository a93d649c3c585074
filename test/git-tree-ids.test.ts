// GitTree's ids against the real git binary: the same files (any blob ids: git write-tree
// --missing-ok does not need the blobs) must give the same root tree id, after the first fill and
// after changes that keep, reorder, empty and turn directories into files. A wrong order (git sorts
// names by their UTF-8 bytes, a subtree as if its name ended in '/') or a stale cached row changes
// the id, and every commit id of a push or an export with it.
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GitFileMode, GitTree } from '../engine/git/object-ids.js';
import { compareUtf8 } from '../engine/paths.js';
import { git } from './helpers/git.js';

let repo = '';

beforeAll(async () => {
  repo = await mkdtemp(join(tmpdir(), 'strata-git-tree-'));
  await run(['init', '-q']);
});
afterAll(async () => {
  await rm(repo, { recursive: true, force: true });
});

const run = async (args: string[], input?: string) => (await git(repo, repo, args, input === undefined ? undefined : Buffer.from(input))).toString().trim();

/** git's root tree id for these files (path → [mode, blob id]). */
async function gitRoot(files: Map<string, [GitFileMode, string]>): Promise<string> {
  await rm(join(repo, '.git', 'index'), { force: true });
  // -z: paths are NUL-terminated, so names with any character go through unquoted.
  const lines = [...files].map(([path, [mode, id]]) => `${mode} ${id}\t${path}\0`).join('');
  await run(['update-index', '-z', '--index-info'], lines);
  return run(['write-tree', '--missing-ok']);
}

const blobId = (seed: string) => createHash('sha1').update(seed).digest('hex');

describe('GitTree ids', () => {
  it('match git write-tree through a series of changes', async () => {
    const names = [
      'a',
      'a.b',
      'a-b',
      'ab/c.m',
      'ab.c',
      'ab-c',
      'ab0',
      'é.m',
      'z\u{e000}.m',
      'z\u{fffd}.m',
      'z\u{1f600}.m',
      'zz/deep/er/file.py',
      'zz/deep/x',
      'run.sh',
      'q',
    ];
    const files = new Map<string, [GitFileMode, string]>();
    const tree = new GitTree();
    const set = (path: string, mode: GitFileMode, seed: string) => {
      files.set(path, [mode, blobId(seed)]);
      tree.set(path, mode, blobId(seed));
    };
    const remove = (path: string) => {
      files.delete(path);
      tree.delete(path);
    };
    for (const name of names) set(name, name.endsWith('.sh') ? '100755' : '100644', name);
    expect(tree.rootId()).toBe(await gitRoot(files));

    // New content for one file, a mode change, a new name among existing ones
    set('a.b', '100644', 'a.b v2');
    set('run.sh', '100644', 'run.sh');
    set('ab/d.m', '100644', 'ab/d.m');
    expect(tree.rootId()).toBe(await gitRoot(files));

    // A directory emptied disappears; a file becomes a directory (its name sorts as 'q/' then)
    remove('zz/deep/er/file.py');
    remove('q');
    set('q/inner.m', '100644', 'q/inner.m');
    expect(tree.rootId()).toBe(await gitRoot(files));

    // A file replaced by a directory in one change (as fast-import takes `M a/x.m` over a file `a`):
    // 'a' sorted before 'a-b' and 'a.b'; as the tree 'a/' it sorts after them
    files.delete('a');
    set('a/x.m', '100644', 'a/x.m');
    expect(tree.rootId()).toBe(await gitRoot(files));

    // ...and a directory becomes a file again
    remove('q/inner.m');
    tree.rootId();
    set('q', '100644', 'q v3');
    expect(tree.rootId()).toBe(await gitRoot(files));
  });

  it('orders names by their UTF-8 bytes', () => {
    const names = ['b', 'a', '\u{e000}', '\u{1f600}', '\u{fffd}', 'é', 'a/', 'a.', 'A', '\u{10000}'];
    const byBytes = [...names].sort((x, y) => Buffer.compare(Buffer.from(x, 'utf8'), Buffer.from(y, 'utf8')));
    expect([...names].sort(compareUtf8)).toEqual(byBytes);
  });
});
