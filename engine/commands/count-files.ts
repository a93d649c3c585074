import type { EngineContext } from '../context.js';

const PAGE = 5000;

/**
 * How many files the project has now (deleted paths excluded). One pass over the current entries in
 * pages: the daemon asks for it rarely (the mount's mass-delete guard, at most every 30 s).
 */
export async function countFiles(ctx: EngineContext, projectId: string): Promise<number> {
  await ctx.requireProject(projectId);
  let count = 0;
  let cursor: string | undefined;
  do {
    const page = await ctx.repository.versions.listEntries(projectId, { prefix: '', limit: PAGE, ...(cursor ? { cursor } : {}) });
    count += page.items.length;
    cursor = page.nextCursor;
  } while (cursor);
  return count;
}
