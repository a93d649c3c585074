// Issue 38 items 9, 10 and 11 (found by the single-workstation model, test/model/): a restore or a
// snapshot is computed from the project's current state, so edits still waiting to be captured (in
// their settle delay, a deletion waiting to commit) are versioned first and the restore lands on top
// (daemon/capture-first.ts); a directory where a restored file goes is replaced when it holds only
// directories, and the restore is refused, recording nothing, when it holds files the project does
// not version (daemon/watch/in-the-way.ts).

import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Snapshot, VersionRecord } from '../engine/types.js';
import { type WatchedProject, waitFor, watchProject } from './daemon-harness.js';

const readOrNull = (path: string) => readFile(path, 'utf8').catch(() => null);
const kind = async (path: string) => {
  const st = await stat(path).catch(() => null);
  return st === null ? null : st.isDirectory() ? 'dir' : 'file';
};

describe('watch mode: restores and snapshots with edits still waiting to be captured', () => {
  let w: WatchedProject;
  beforeEach(async () => {
    w = await watchProject();
  });
  afterEach(async () => {
    await w.dispose();
  });
  const p = (suffix: string) => `/v1/projects/${w.projectId}${suffix}`;
  const snapshot = () => w.api<Snapshot>('POST', p('/fs/snapshots'), { message: 'model' });
  const restore = (s: Snapshot) => w.api<{ changed: number; versions: VersionRecord[] }>('POST', p(`/fs/snapshots/${s.snapshotId}/restore`), {});
  const write = async (path: string, content: string) => {
    await writeFile(join(w.dir, path), content);
    await waitFor(`${path} versioned`, async () => ((await w.read(path).catch(() => null)) === content ? true : undefined), 20_000);
  };

  it('rm f, then a restore of a snapshot that has f: the deletion is versioned first, and f comes back', async () => {
    await write('f', 'x\n');
    const s1 = await snapshot();
    await rm(join(w.dir, 'f'));
    // At once: the deletion is still waiting out its settle time (500 ms) when the restore is asked for.
    const restored = await restore(s1);
    expect(restored.changed).toBe(1);
    await waitFor('f back on disk', async () => ((await readOrNull(join(w.dir, 'f'))) === 'x\n' ? true : undefined), 20_000);
    await w.idle();
    const kinds = (await w.history('f')).map((v) => v.kind);
    expect(kinds.slice(0, 3)).toEqual(['snapshot-restore', 'delete', 'write']);
  });

  it('mkdir d; echo x > d/f, then a restore of a snapshot without d/f: d/f is versioned first, then removed', async () => {
    await write('g', 'g\n');
    const s1 = await snapshot();
    await mkdir(join(w.dir, 'd'));
    await writeFile(join(w.dir, 'd', 'f'), 'x\n');
    const restored = await restore(s1);
    expect(restored.changed).toBe(1);
    await w.idle();
    await waitFor('d/f removed from disk', async () => ((await kind(join(w.dir, 'd', 'f'))) === null ? true : undefined), 20_000);
    expect(await kind(join(w.dir, 'd'))).toBeNull();
    const history = await w.history('d/f');
    expect(history.map((v) => v.kind)).toEqual(['snapshot-restore', 'write']);
    expect(history[0]!.contentHash).toBeNull();
    expect((await w.tree()).has('d/f')).toBe(false);
  });

  it('a snapshot taken right after a save has the save', async () => {
    await write('a', 'a1\n');
    await writeFile(join(w.dir, 'a'), 'a2\n');
    await writeFile(join(w.dir, 'b'), 'b1\n');
    await mkdir(join(w.dir, 'c'));
    await writeFile(join(w.dir, 'c', 'd'), 'd1\n');
    const s = await snapshot();
    const entries = await w.api<{ items: Array<{ path: string; size: number }> }>('GET', p(`/fs/snapshots/${s.snapshotId}/entries`));
    expect(entries.items.map((e) => [e.path, e.size])).toEqual([
      ['a', 3],
      ['b', 3],
      ['c/d', 3],
    ]);
  });

  it('a file restored where an empty directory now stands replaces the directory', async () => {
    await write('P', 'data\n');
    const s1 = await snapshot();
    await rm(join(w.dir, 'P'));
    await mkdir(join(w.dir, 'P', 'sub'), { recursive: true });
    await w.idle();
    const restored = await restore(s1);
    expect(restored.changed).toBe(1);
    await waitFor('P a file again', async () => ((await kind(join(w.dir, 'P'))) === 'file' ? true : undefined), 20_000);
    expect(await readOrNull(join(w.dir, 'P'))).toBe('data\n');
    await w.idle();
    expect((await w.history('P'))[0]!.kind).toBe('snapshot-restore');
    expect((await w.status()).warnings).toEqual([]);
  });

  it('a file restored where a directory holding unversioned files stands: refused, nothing recorded, the directory kept', async () => {
    await write('P', 'data\n');
    const s1 = await snapshot();
    await rm(join(w.dir, 'P'));
    await mkdir(join(w.dir, 'P'));
    await writeFile(join(w.dir, 'P', 'notes.swp'), 'swap file\n');
    await w.idle();
    const before = await w.history('P');
    const refused = await restore(s1).then(
      () => null,
      (error: Error) => error.message,
    );
    expect(refused).toMatch(/409/);
    expect(refused).toMatch(/PATH_IS_DIRECTORY/);
    expect(refused).toMatch(/P\/notes\.swp/);
    expect(await w.history('P')).toEqual(before);
    expect(await readOrNull(join(w.dir, 'P', 'notes.swp'))).toBe('swap file\n');
    // The same for a single version.
    const version = before.find((v) => v.contentHash !== null)!;
    const one = await w.api('POST', p('/history/restore'), { versionId: version.versionId }).then(
      () => null,
      (error: Error) => error.message,
    );
    expect(one).toMatch(/PATH_IS_DIRECTORY/);
    expect(await w.history('P')).toEqual(before);
  });
});
