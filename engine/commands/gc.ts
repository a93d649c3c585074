import type { EngineContext } from '../context.js';
import type { GcReport } from '../engine-api.js';
import type { ContentHash } from '../types.js';

const CHECK_BATCH = 500;

/**
 * Full collection. Scanning the store happens without the lock (it can take long); only objects older
 * than the grace period are candidates, and each batch of candidates is re-checked against the
 * repository and deleted under the exclusive GC lock, so a write that just stored or deduplicated
 * against an object (holding the shared lock until its record commits) never loses it. The grace
 * period protects writers on other hosts sharing the same store (the server), which this lock does
 * not see.
 */
export async function gc(ctx: EngineContext, options: { graceMs?: number } = {}): Promise<GcReport> {
  await ctx.retention.settle();
  const graceMs = options.graceMs ?? ctx.gcGraceMs;
  const cutoff = ctx.clock.now() - graceMs;
  const report: GcReport = { objectsScanned: 0, objectsDeleted: 0, bytesFreed: 0 };
  let batch: Array<{ hash: ContentHash; size: number }> = [];

  const sweep = async (): Promise<void> => {
    const candidates = batch;
    batch = [];
    await ctx.gcLock.exclusive(async () => {
      const referenced = await ctx.repository.versions.referencedHashes(candidates.map((c) => c.hash));
      for (const candidate of candidates) {
        if (referenced.has(candidate.hash)) continue;
        const info = await ctx.store.stat(candidate.hash);
        // Deduplicated against since the scan: a write refreshed it; spare it.
        if (!info || info.touchedAtMs >= cutoff) continue;
        if (!(await collectObject(ctx, candidate.hash, graceMs))) continue;
        report.objectsDeleted += 1;
        report.bytesFreed += candidate.size;
      }
    });
  };

  for await (const object of ctx.store.list()) {
    report.objectsScanned += 1;
    if (object.touchedAtMs >= cutoff) continue;
    batch.push({ hash: object.hash, size: object.size });
    if (batch.length >= CHECK_BATCH) await sweep();
  }
  if (batch.length > 0) await sweep();
  if (report.objectsDeleted > 0 && ctx.store.compact !== undefined) await ctx.store.compact();
  return report;
}

/**
 * Deletes an object nothing referenced when last checked: through the store's collect() where other
 * processes write to it too (replicas sharing a bucket: it may still spare the object), else plainly
 * (the engine's GC lock, held by the caller, excludes every writer). True if it is gone.
 */
export async function collectObject(ctx: EngineContext, hash: ContentHash, graceMs: number): Promise<boolean> {
  if (ctx.store.collect !== undefined) return ctx.store.collect(hash, graceMs);
  await ctx.store.delete(hash);
  return true;
}
