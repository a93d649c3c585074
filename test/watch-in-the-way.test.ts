// daemon/watch/in-the-way.ts: a directory where a pulled file goes is removed when it holds nothing
// but what history has. Bringing a pulled deletion to disk removes the directories it empties, and
// may do so while the file is being brought to the directory's place (seed 42000 of the sync model:
// the deletion of `a/a/b` and the file `a` side by side): the write of `a` failed with ENOENT
// (scandir …/a) and sync said "could not be written here" until its retry.
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HostContext } from '../daemon/host.js';
import { removeEmptyTree, removeVersionedTreeInTheWay } from '../daemon/watch/in-the-way.js';

describe('watch mode: a directory in the way that goes away meanwhile', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-in-the-way-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('a directory gone before its walk is no longer in the way', async () => {
    // Nothing below it is looked up: the host is never asked.
    const host = {} as HostContext;
    expect(await removeVersionedTreeInTheWay(host, 'a', join(root, 'a'))).toBe(true);
    expect(await removeEmptyTree(join(root, 'a'))).toBe(true);
  });

  it('a tree of directories only is still removed', async () => {
    await mkdir(join(root, 'a', 'a'), { recursive: true });
    expect(await removeVersionedTreeInTheWay({} as HostContext, 'a', join(root, 'a'))).toBe(true);
    expect(await stat(join(root, 'a')).catch(() => null)).toBeNull();
  });
});
