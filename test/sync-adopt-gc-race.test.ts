// A pulled version's content is never collected between adoption's "it is here" and its record's
// commit (the sync model's seed 43001: B's store lost the bytes of its own `a/a/a`, which the server
// kept as a conflict copy; fsck "1 missing"). The pull fetches only what the store lacks; retention,
// triggered by the same page's adoptions, pruned the version that referenced those bytes here and
// collected them before the pulled record referencing them committed.
//
// The collection is made to run at the one moment that matters, deterministically: when adoption
// reads the path's entry (after it knows the content is here, before it commits), the version that
// references the content is pruned, and the collection runs to its end right then — unless a write
// holds the GC lock (as a write does from "bytes stored" to "record committed", rw-lock.ts), when it
// runs as soon as the lock lets it.
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { adoptSyncedVersions } from '../engine/commands/sync-adopt.js';
import { setRetention } from '../engine/commands/retention.js';
import { applySyncedVersions } from '../engine/commands/sync-versions.js';
import { writeFile } from '../engine/commands/write-file.js';
import { createEngineContext, type EngineContext } from '../engine/context.js';
import { createIdGenerator } from '../engine/ids.js';
import type { VersionRecord } from '../engine/types.js';
import { alice, openTestEngine, type TestEngine } from './helpers/world.js';

describe('engine: adopting pulled versions while retention collects', () => {
  let t: TestEngine;
  beforeEach(async () => {
    t = await openTestEngine();
  });
  afterEach(async () => {
    await t.dispose();
  });

  /**
   * An engine context over the test engine's home whose repository runs `onEntry` when adoption reads
   * the current entry of a path (after its content check, before its commit), and how many writes
   * hold the GC lock shared.
   */
  function contextWithHook(onEntry: (path: string) => Promise<void>, onIdCheck?: () => Promise<void>): { ctx: EngineContext; sharedHeld: () => number } {
    let held = 0;
    const versions = new Proxy(t.repository.versions, {
      get(target, prop) {
        if (prop === 'getEntry') {
          return async (projectId: string, path: string) => {
            await onEntry(path);
            return target.getEntry(projectId, path);
          };
        }
        if (prop === 'versionIdInUse' && onIdCheck !== undefined) {
          return async (versionId: string) => {
            await onIdCheck();
            return target.versionIdInUse(versionId);
          };
        }
        const value = Reflect.get(target, prop) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const repository = { ...t.repository, versions };
    const ctx = createEngineContext({ store: t.store, repository, clock: t.clock, ids: createIdGenerator(t.clock), gcGraceMs: 0 });
    const lock = ctx.gcLock;
    ctx.gcLock = {
      shared: (fn) =>
        lock.shared(async () => {
          held += 1;
          try {
            return await fn();
          } finally {
            held -= 1;
          }
        }),
      exclusive: (fn) => lock.exclusive(fn),
    };
    return { ctx, sharedHeld: () => held };
  }

  it.each([
    ['a version of the server\'s with bytes this store has', 'adopted'],
    ['this workstation\'s own version, kept by the server as a conflict copy', 'copied'],
  ])('keeps the content of %s though retention released it meanwhile', async (_, result) => {
    const copyPath = 'a (conflict wsB 2026-11-29 1220)/a/a';
    let armed = false;
    const { ctx, sharedHeld } = contextWithHook(async (path) => {
      if (!armed || path !== copyPath) return;
      armed = false;
      // The version here that references the bytes goes (retention 1, its path moved on), releasing them…
      await setRetention(ctx, { projectId: t.projectId, maxVersions: 1, actor: alice });
      // …and the collection runs now, unless a write holds the lock.
      if (sharedHeld() === 0) await ctx.retention.settle();
    });
    const first = await writeFile(ctx, { projectId: t.projectId, path: 'a/a/a', actor: alice, content: Buffer.from('v67\n+92\n') });
    await writeFile(ctx, { projectId: t.projectId, path: 'a/a/a', actor: alice, content: Buffer.from('later\n') });
    const hash = first.version.contentHash!;
    // The server's conflict copy of those bytes: under an id of its own, or this workstation's id
    // (the pull fetched nothing either way: the store has the bytes).
    const record: VersionRecord = { ...first.version, path: copyPath, ...(result === 'adopted' ? { versionId: randomUUID() } : {}) };
    armed = true;
    const outcomes = await adoptSyncedVersions(ctx, { projectId: t.projectId, pushedSeq: Number.MAX_SAFE_INTEGER, versions: [{ record, current: true }] });
    expect(armed).toBe(false);
    expect(outcomes.map((o) => o.result)).toEqual([result]);
    await ctx.retention.settle();
    // The copy references the bytes, and they are here.
    expect((await t.engine.stat({ projectId: t.projectId, path: copyPath }))?.contentHash).toBe(hash);
    expect(await t.store.has(hash)).toBe(true);
    expect((await t.engine.fsck()).missing).toEqual([]);
  });

  it('the server keeps content a pushed version references though retention released it meanwhile', async () => {
    // The same on the server's side: a workstation does not send content the server has; there it
    // may be referenced only by a version retention prunes while the push is applied.
    let armed = false;
    const { ctx, sharedHeld } = contextWithHook(
      async () => undefined,
      async () => {
        if (!armed) return;
        armed = false;
        await setRetention(ctx, { projectId: t.projectId, maxVersions: 1, actor: alice });
        if (sharedHeld() === 0) await ctx.retention.settle();
      },
    );
    const first = await writeFile(ctx, { projectId: t.projectId, path: 'fit.m', actor: alice, content: Buffer.from('same bytes\n') });
    await writeFile(ctx, { projectId: t.projectId, path: 'fit.m', actor: alice, content: Buffer.from('later\n') });
    const hash = first.version.contentHash!;
    armed = true;
    const pushed = { versionId: randomUUID(), path: 'copy.m', baseVersionId: null, contentHash: hash, timestamp: '2026-11-29T12:20:40.000Z' };
    const outcomes = await applySyncedVersions(ctx, { projectId: t.projectId, actor: alice, workstation: 'wsB', versions: [pushed] });
    expect(armed).toBe(false);
    expect(outcomes.map((o) => o.result)).toEqual(['applied']);
    await ctx.retention.settle();
    expect(await t.store.has(hash)).toBe(true);
    expect((await t.engine.fsck()).missing).toEqual([]);
  });
});
