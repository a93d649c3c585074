// Snapshots stored as change sets on a checkpoint (sqlite-migrations.ts version 6): over a long
// random history that rolls over several checkpoints, every snapshot still lists exactly the tree it
// was taken of, diffs between any two are what the trees say, retention never prunes a version a
// snapshot pins (through its checkpoint or through a change set), and a restore gives the tree back.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { prng } from '../bench/lib/pool.js';
import type { Snapshot } from '../engine/types.js';
import { alice, openTestEngine, readAll, type TestEngine } from './helpers/world.js';

type Tree = Map<string, string>;

describe('snapshots built on checkpoints', () => {
  let t: TestEngine;
  beforeEach(async () => {
    t = await openTestEngine();
  });
  afterEach(async () => {
    await t.dispose();
  });

  async function listed(snapshotId: string): Promise<Tree> {
    const tree: Tree = new Map();
    let cursor: string | undefined;
    do {
      const page = await t.engine.snapshotEntries({ projectId: t.projectId, snapshotId, limit: 37, ...(cursor ? { cursor } : {}) });
      for (const entry of page.items) tree.set(entry.path, entry.contentHash);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return tree;
  }

  it('every snapshot of a 150-snapshot random history is its tree, through checkpoint rollovers, retention and restore', async () => {
    const next = prng(13);
    const random = (n: number) => next() % n;
    const paths = Array.from({ length: 120 }, (_, i) => `d${i % 7}/f${i}.txt`);
    const current: Tree = new Map();
    const taken: Array<{ snapshot: Snapshot; tree: Tree }> = [];
    for (let s = 0; s < 150; s++) {
      const operations = s === 0 ? 80 : 1 + random(6);
      for (let k = 0; k < operations; k++) {
        const path = paths[random(paths.length)]!;
        if (current.has(path) && random(4) === 0) {
          await t.engine.deleteFile({ projectId: t.projectId, path, actor: alice });
          current.delete(path);
        } else {
          const { entry } = await t.engine.writeFile({ projectId: t.projectId, path, actor: alice, content: Buffer.from(`${path} @ ${s}.${k}`) });
          current.set(path, entry.contentHash);
        }
      }
      const snapshot = await t.engine.createSnapshot({ projectId: t.projectId, actor: alice, message: `s${s}` });
      taken.push({ snapshot, tree: new Map(current) });
    }
    for (const { snapshot, tree } of taken) expect(await listed(snapshot.snapshotId)).toEqual(tree);

    // diffs between snapshots far apart and close together, both ways, and against the current tree
    for (const [a, b] of [[0, 149], [63, 64], [64, 65], [10, 140], [149, 3], [100, 100]] as const) {
      const from = taken[a]!;
      const to = taken[b]!;
      const diff = await t.engine.diffSnapshots({ projectId: t.projectId, from: from.snapshot.snapshotId, to: to.snapshot.snapshotId });
      const expected = [...new Set([...from.tree.keys(), ...to.tree.keys()])].filter((p) => from.tree.get(p) !== to.tree.get(p)).sort();
      expect(diff.map((d) => d.path)).toEqual(expected);
    }

    // retention of one version per path: every pinned version stays readable
    await t.engine.setRetention({ projectId: t.projectId, maxVersions: 1, actor: alice });
    await t.engine.settle();
    for (const index of [0, 1, 40, 63, 64, 65, 128, 149]) {
      const { snapshot, tree } = taken[index]!;
      expect(await listed(snapshot.snapshotId)).toEqual(tree);
      const entries = (await t.engine.snapshotEntries({ projectId: t.projectId, snapshotId: snapshot.snapshotId, limit: 1000 })).items;
      for (const entry of entries.slice(0, 5)) {
        const body = await readAll((await t.engine.readFile({ projectId: t.projectId, versionId: entry.versionId })).stream);
        expect(body.toString()).toMatch(/ @ /);
      }
    }
    expect((await t.engine.fsck()).ok).toBe(true);

    // a restore of a snapshot in the middle of a chain gives its tree back
    const middle = taken[70]!;
    await t.engine.restoreSnapshot({ projectId: t.projectId, snapshotId: middle.snapshot.snapshotId, actor: alice });
    const after = await t.engine.createSnapshot({ projectId: t.projectId, actor: alice, message: 'after restore' });
    expect(await listed(after.snapshotId)).toEqual(middle.tree);
    expect(await t.engine.diffSnapshots({ projectId: t.projectId, from: middle.snapshot.snapshotId })).toEqual([]);
  }, 120_000);
});
