import type { EngineContext } from '../context.js';
import { isNoRoom } from '../errors.js';
import type { GcReport } from '../engine-api.js';
import type { ContentHash } from '../types.js';

const CHECK_BATCH = 500;

/**
 * Full collection. Scanning the store happens without the lock (it can take long); only objects older
 * than the grace period are candidates, and each batch of candidates is re-checked against the
 * repository and deleted under the exclusive GC lock, so a write that just stored or deduplicated
 * against an object (holding the shared lock until its record commits) never loses it. The grace
 * period protects writers on other hosts sharing the same store (the server), which this lock does
 * not see. Unreferenced objects it spares for being younger are counted (objectsKept, bytesKept): a
 * `retention set 1; gc` that freed nothing said only "0 deleted", not that it would in 10 minutes.
 */
export async function gc(ctx: EngineContext, options: { graceMs?: number } = {}): Promise<GcReport> {
  try {
    await ctx.retention.settle();
  } catch (error) {
    // Retention's own collection failed on the full disk this run is meant to relieve: what it did not
    // delete is unreferenced now, and collected here (after the grace period).
    if (!isNoRoom(error)) throw error;
  }
  const graceMs = options.graceMs ?? ctx.gcGraceMs;
  const cutoff = ctx.clock.now() - graceMs;
  const report: GcReport = { objectsScanned: 0, objectsDeleted: 0, bytesFreed: 0, objectsKept: 0, bytesKept: 0, graceMs };
  let batch: Array<{ hash: ContentHash; size: number; young: boolean }> = [];

  const sweep = async (): Promise<void> => {
    const candidates = batch;
    batch = [];
    await ctx.gcLock.exclusive(async () => {
      const referenced = await ctx.repository.versions.referencedHashes(candidates.map((c) => c.hash));
      for (const candidate of candidates) {
        if (referenced.has(candidate.hash)) continue;
        const info = await ctx.store.stat(candidate.hash);
        if (!info) continue;
        // Young at the scan, or deduplicated against since (a write refreshed it): spare it.
        if (candidate.young || info.touchedAtMs >= cutoff) {
          report.objectsKept += 1;
          report.bytesKept += candidate.size;
          continue;
        }
        if (!(await collectObject(ctx, candidate.hash, graceMs))) continue;
        report.objectsDeleted += 1;
        report.bytesFreed += candidate.size;
      }
    });
  };

  try {
    for await (const object of ctx.store.list()) {
      report.objectsScanned += 1;
      batch.push({ hash: object.hash, size: object.size, young: object.touchedAtMs >= cutoff });
      if (batch.length >= CHECK_BATCH) await sweep();
    }
    if (batch.length > 0) await sweep();
    if (report.objectsDeleted > 0 && ctx.store.compact !== undefined) {
      try {
        await ctx.store.compact();
      } catch (error) {
        // Rewriting a shard pack needs room for the copy; on a disk still full the deletes above are
        // what this run could do, and the next one compacts.
        if (!isNoRoom(error)) throw error;
      }
    }
  } finally {
    // A reserve released above (collectObject) is made again now, if the collection left room for it.
    await ctx.store.keepReserve?.();
  }
  return report;
}

/**
 * Deletes an object nothing referenced when last checked: through the store's collect() where other
 * processes write to it too (replicas sharing a bucket: it may still spare the object), else plainly
 * (the engine's GC lock, held by the caller, excludes every writer). True if it is gone.
 */
export async function collectObject(ctx: EngineContext, hash: ContentHash, graceMs: number): Promise<boolean> {
  // A delete writes its index first, which needs room a full disk does not have.
  return withReserve(ctx, async () => {
    if (ctx.store.collect !== undefined) return ctx.store.collect(hash, graceMs);
    await ctx.store.delete(hash);
    return true;
  });
}

/**
 * Runs a write that frees space (a delete, a retention prune) and, if the disk is full, runs it once
 * more after giving back the store's reserve (the caller makes it again afterwards: keepReserve).
 */
export async function withReserve<T>(ctx: EngineContext, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (!isNoRoom(error) || ctx.store.releaseReserve === undefined || !(await ctx.store.releaseReserve())) throw error;
    return write();
  }
}

