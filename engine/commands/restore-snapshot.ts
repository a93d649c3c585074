import type { EngineContext } from '../context.js';
import type { SnapshotRestoreResult } from '../engine-api.js';
import { StrataError } from '../errors.js';
import type { VersionCommit } from '../ports/metadata-repository.js';
import type { Actor } from '../types.js';
import { getSnapshot } from './snapshots.js';

const ATTEMPTS = 5;

/**
 * Repoints every path that differs from the snapshot (no content bytes are copied: the new records
 * point to the pinned content), deletes paths created since, and brings back paths deleted since.
 * Only changed paths get a `snapshot-restore` version. All of it commits in one transaction, with each
 * path's current version as precondition; if a concurrent write moved a path, the plan is recomputed.
 */
export async function restoreSnapshot(ctx: EngineContext, input: { projectId: string; snapshotId: string; actor: Actor }): Promise<SnapshotRestoreResult> {
  const snapshot = await getSnapshot(ctx, input.projectId, input.snapshotId);
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    await ctx.batcher.drain();
    const plan = await ctx.repository.snapshots.restorePlan(input.projectId, snapshot.snapshotId);
    if (plan.length === 0) return { snapshot, changed: 0, versions: [] };
    const commits: VersionCommit[] = plan.map((item) => ({
      record: ctx.newVersion({
        projectId: input.projectId,
        path: item.path,
        contentHash: item.pinned ? item.pinned.contentHash : null,
        size: item.pinned ? item.pinned.size : 0,
        actor: input.actor,
        kind: 'snapshot-restore',
        restoredFrom: item.pinned ? item.pinned.versionId : null,
        executable: item.pinned ? item.pinned.executable : false,
        symlink: item.pinned ? item.pinned.symlink : false,
        dataset: item.pinned ? item.pinned.dataset : false,
      }),
      expectedCurrent: item.current ? item.current.versionId : null,
    }));
    const results = await ctx.batcher.submitAtomic(commits);
    if (results.every((r) => r.ok)) {
      for (const commit of commits) ctx.retention.schedule(input.projectId, commit.record.path);
      return { snapshot, changed: commits.length, versions: commits.map((c) => c.record) };
    }
  }
  throw new StrataError('STALE_BASE_VERSION', {
    message: 'Files kept changing during the snapshot restore; nothing was restored. Try again.',
    details: { snapshotId: snapshot.snapshotId },
  });
}
