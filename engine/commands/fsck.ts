import type { EngineContext } from '../context.js';
import type { FsckReport } from '../engine-api.js';
import type { ContentHash } from '../types.js';

const MAX_LISTED = 1000;

/**
 * Checks every reference (each hash a version record or snapshot pin points to must be stored and
 * intact) and every stored object (it must hash to its name). Reads everything once; large objects
 * are re-hashed off the event loop by the store.
 *
 * With `projectIds`, only what those projects reference is checked and reported (an organization's
 * fsck on a shared server): the store is shared and deduplicated across organizations, so its other
 * objects, and their count, are none of the caller's business.
 */
export async function fsck(ctx: EngineContext, options: { projectIds?: string[]; onProgress?: (done: number) => void } = {}): Promise<FsckReport> {
  await ctx.batcher.drain();
  const scoped = options.projectIds !== undefined;
  const report: FsckReport = { scope: scoped ? 'projects' : 'store', objectsChecked: 0, referencesChecked: 0, missing: [], corrupt: [], ok: true };
  const checked = new Map<ContentHash, 'ok' | 'missing' | 'corrupt'>();
  let done = 0;

  const references = scoped ? projectsReferences(ctx, options.projectIds!) : ctx.repository.versions.allReferencedHashes();
  for await (const hash of references) {
    if (checked.has(hash)) continue;
    report.referencesChecked += 1;
    const state = await ctx.store.verify(hash);
    checked.set(hash, state);
    if (state === 'missing' && report.missing.length < MAX_LISTED) report.missing.push({ hash });
    if (state === 'corrupt' && report.corrupt.length < MAX_LISTED) report.corrupt.push(hash);
    options.onProgress?.(++done);
  }
  if (scoped) {
    report.objectsChecked = [...checked.values()].filter((state) => state !== 'missing').length;
  } else {
    for await (const object of ctx.store.list()) {
      report.objectsChecked += 1;
      if (!checked.has(object.hash)) {
        const state = await ctx.store.verify(object.hash);
        if (state === 'corrupt' && report.corrupt.length < MAX_LISTED) report.corrupt.push(object.hash);
        options.onProgress?.(++done);
      }
    }
  }
  report.ok = report.missing.length === 0 && report.corrupt.length === 0;
  return report;
}

async function* projectsReferences(ctx: EngineContext, projectIds: string[]): AsyncIterable<ContentHash> {
  for (const projectId of projectIds) yield* ctx.repository.versions.projectReferencedHashes(projectId);
}
