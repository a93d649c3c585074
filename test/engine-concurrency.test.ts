import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { alice, openTestEngine, readAll, type TestEngine } from './helpers/world.js';

describe('engine: concurrency', () => {
  let t: TestEngine;
  beforeEach(async () => {
    t = await openTestEngine();
  });
  afterEach(async () => {
    await t.dispose();
  });

  it('many writers on the same and different paths: every ack is in history, order is consistent', async () => {
    const paths = Array.from({ length: 10 }, (_, i) => `p${i}.txt`);
    const acked = await Promise.all(
      Array.from({ length: 400 }, (_, i) =>
        t.engine.writeFile({ projectId: t.projectId, path: paths[i % paths.length]!, actor: alice, content: Buffer.from(`write ${i}`) }),
      ),
    );
    for (const path of paths) {
      const history = (await t.engine.history({ projectId: t.projectId, path, limit: 1000 })).items;
      const mine = acked.filter((w) => w.version.path === path).map((w) => w.version.versionId);
      expect(history.map((v) => v.versionId).sort()).toEqual([...mine].sort());
      // the current entry is the newest history record
      const entry = await t.engine.stat({ projectId: t.projectId, path });
      expect(entry!.versionId).toBe(history[0]!.versionId);
      const text = (await readAll((await t.engine.readFile({ projectId: t.projectId, path })).stream)).toString();
      expect(acked.find((w) => w.version.versionId === entry!.versionId)!.version.size).toBe(text.length);
    }
    const all = (await t.engine.history({ projectId: t.projectId, limit: 1000 })).items;
    expect(all).toHaveLength(400);
    expect(new Set(all.map((v) => v.versionId)).size).toBe(400);
  });

  it('a snapshot is atomic with respect to concurrent writes', async () => {
    const acknowledged = new Map<string, string>(); // path -> versionId acked before the snapshot began
    let snapshotStarted = false;
    const writes = Array.from({ length: 300 }, async (_, i) => {
      await new Promise((r) => setTimeout(r, i % 30));
      const result = await t.engine.writeFile({ projectId: t.projectId, path: `f${i % 50}.txt`, actor: alice, content: Buffer.from(`${i}`) });
      if (!snapshotStarted) acknowledged.set(result.version.path, result.version.versionId);
      return result;
    });
    await new Promise((r) => setTimeout(r, 12));
    snapshotStarted = true;
    const ackedBefore = new Map(acknowledged);
    const snapshot = await t.engine.createSnapshot({ projectId: t.projectId, actor: alice });
    const results = await Promise.all(writes);
    const pinned = new Map((await t.engine.snapshotEntries({ projectId: t.projectId, snapshotId: snapshot.snapshotId, limit: 1000 })).items.map((e) => [e.path, e.versionId]));
    expect(snapshot.fileCount).toBe(pinned.size);
    // Every write acknowledged before the snapshot started is in it, or superseded by a newer one.
    for (const [path, versionId] of ackedBefore) {
      expect(pinned.get(path)! >= versionId).toBe(true);
    }
    // Every pinned version is a real, acknowledged write.
    const ackedIds = new Set(results.map((r) => r.version.versionId));
    for (const versionId of pinned.values()) expect(ackedIds.has(versionId)).toBe(true);
  });

  it('gc racing writes of the same content never loses an acknowledged version', async () => {
    for (let round = 0; round < 15; round++) {
      const text = `round ${round}`;
      await t.engine.writeFile({ projectId: t.projectId, path: 'r.txt', actor: alice, content: Buffer.from(text) });
      await t.engine.deleteFile({ projectId: t.projectId, path: 'r.txt', actor: alice });
      await t.engine.setRetention({ projectId: t.projectId, maxVersions: 1, actor: alice }); // content now unreferenced
      await t.engine.settle();
      t.clock.advance(1000); // ... and older than gc's cutoff
      const [, written] = await Promise.all([
        t.engine.gc({ graceMs: 0 }),
        t.engine.writeFile({ projectId: t.projectId, path: 'r.txt', actor: alice, content: Buffer.from(text) }),
      ]);
      await t.engine.settle();
      const back = await readAll((await t.engine.readFile({ projectId: t.projectId, path: 'r.txt', versionId: written.version.versionId })).stream);
      expect(back.toString()).toBe(text);
      await t.engine.setRetention({ projectId: t.projectId, maxVersions: 0, actor: alice });
    }
    expect((await t.engine.fsck()).ok).toBe(true);
  });
});
