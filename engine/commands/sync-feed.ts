// Sync's change feed (issue 14): the project's version records in commit order after a cursor, so a
// workstation brings down what others recorded — from where it stopped, after a restart or a week
// offline — instead of comparing whole trees. The cursor is a commit position (it only grows); the
// workstation leaves out the versions it sent itself (their ids are its own).
import type { EngineContext } from '../context.js';
import { StrataError } from '../errors.js';
import type { SyncChange } from '../ports/metadata-repository.js';
import { clampLimit } from './history.js';

export interface ChangesPage {
  /** each with `current`: whether it was its path's current version when read */
  items: SyncChange[];
  /** where the next call starts: the last item's position, or the given cursor when nothing is new */
  cursor: string;
  /** a full page: more may follow at once */
  more: boolean;
}

export async function syncChanges(ctx: EngineContext, input: { projectId: string; cursor?: string; limit?: number }): Promise<ChangesPage> {
  await ctx.requireProject(input.projectId);
  const limit = clampLimit(input.limit);
  const afterSeq = input.cursor === undefined || input.cursor === '' ? 0 : parseCursor(input.cursor);
  const page = await ctx.repository.versions.changesAfter(input.projectId, afterSeq, limit);
  return { items: page.items, cursor: String(page.lastSeq ?? afterSeq), more: page.items.length === limit };
}

function parseCursor(cursor: string): number {
  const seq = /^\d{1,15}$/.test(cursor) ? Number(cursor) : Number.NaN;
  if (!Number.isSafeInteger(seq)) throw new StrataError('INVALID_CURSOR', { details: { field: 'cursor' } });
  return seq;
}
