import { collectObject } from './commands/gc.js';
import type { EngineContext } from './context.js';
import type { ContentHash } from './types.js';

/**
 * Retention runs behind the writes it follows: a write is acknowledged once its record commits, and
 * the pruning it triggers (maxVersions, or keep-1 for files the policy does not version) is
 * coalesced per project and applied shortly after, in one repository call per project. Content the
 * pruning released is then deleted under the GC lock if nothing references it any more.
 */
export interface RetentionWorker {
  /** keep = explicit override (1 for unversioned files); otherwise the project's maxVersions */
  schedule(projectId: string, path: string, keep?: number): void;
  /** delete these objects if unreferenced (after a prune) */
  release(hashes: ContentHash[]): void;
  /** resolves when all scheduled work is done; rejects with the first background failure */
  settle(): Promise<void>;
  /**
   * Sync's hold (issue 14): versions made here after `afterSeq` are not on the server yet, so they
   * are never pruned, whatever maxVersions says (null: no hold).
   */
  hold(projectId: string, afterSeq: number | null): void;
  holdOf(projectId: string): number | undefined;
}

export function createRetentionWorker(ctx: EngineContext): RetentionWorker {
  // projectId -> path -> keep override (0 = use the project's setting)
  let pending = new Map<string, Map<string, number>>();
  let released = new Set<ContentHash>();
  const holds = new Map<string, number>();
  let running: Promise<void> | null = null;
  let failure: unknown = null;

  function kick(): void {
    if (running) return;
    running = (async () => {
      // Let the writes of this turn land first, so they are pruned together.
      await new Promise((r) => setImmediate(r));
      while (pending.size > 0 || released.size > 0) {
        const work = pending;
        pending = new Map();
        for (const [projectId, paths] of work) await pruneProject(projectId, paths);
        const hashes = [...released];
        released = new Set();
        if (hashes.length > 0) await collect(hashes);
      }
    })()
      .catch((error: unknown) => {
        failure ??= error;
      })
      .finally(() => {
        running = null;
        if (pending.size > 0 || released.size > 0) kick();
      });
  }

  async function pruneProject(projectId: string, paths: Map<string, number>): Promise<void> {
    const project = await ctx.repository.projects.get(projectId);
    if (!project) return;
    const byKeep = new Map<number, string[]>();
    for (const [path, override] of paths) {
      const keep = override > 0 ? Math.min(override, project.retention.maxVersions || override) : project.retention.maxVersions;
      if (keep <= 0) continue;
      const list = byKeep.get(keep) ?? [];
      list.push(path);
      byKeep.set(keep, list);
    }
    for (const [keep, list] of byKeep) {
      const hold = holds.get(projectId);
      const result = await ctx.repository.versions.prune(projectId, { keep, paths: list, ...(hold === undefined ? {} : { holdAfterSeq: hold }) });
      for (const hash of result.releasedHashes) released.add(hash);
    }
  }

  /** Under the exclusive GC lock no write sits between "bytes stored" and "record committed". */
  async function collect(hashes: ContentHash[]): Promise<void> {
    await ctx.gcLock.exclusive(async () => {
      const stillReferenced = await ctx.repository.versions.referencedHashes(hashes);
      for (const hash of hashes) {
        if (!stillReferenced.has(hash)) await collectObject(ctx, hash, ctx.gcGraceMs);
      }
    });
    // Outside the lock: compaction only moves bytes that stay referenced, readers and writers go on.
    await ctx.store.compact?.();
    // A reserve a delete on the full disk released (collectObject) is made again once there is room.
    await ctx.store.keepReserve?.();
  }

  return {
    hold(projectId, afterSeq) {
      if (afterSeq === null) holds.delete(projectId);
      else holds.set(projectId, afterSeq);
    },
    holdOf: (projectId) => holds.get(projectId),
    schedule(projectId, path, keep = 0) {
      let paths = pending.get(projectId);
      if (!paths) {
        paths = new Map();
        pending.set(projectId, paths);
      }
      paths.set(path, Math.max(paths.get(path) ?? 0, keep));
      kick();
    },
    release(hashes) {
      for (const hash of hashes) released.add(hash);
      if (hashes.length > 0) kick();
    },
    async settle() {
      while (running) await running;
      if (failure) {
        const error = failure;
        failure = null;
        throw error;
      }
    },
  };
}
