import type { EngineContext } from '../context.js';
import { StrataError } from '../errors.js';
import { isUuid } from '../ids.js';
import type { Actor } from '../types.js';
import { getSnapshot } from './snapshots.js';

// Tags become git tags on export (docs/design.md §5), so they follow git's ref-name rules, stricter.
const TAG = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function validateTag(tag: unknown): string {
  if (typeof tag !== 'string' || !TAG.test(tag) || tag.includes('..') || tag.endsWith('.lock') || tag.endsWith('.') || isUuid(tag)) {
    throw new StrataError('INVALID_ARGUMENT', {
      message: 'A tag is 1–128 letters, digits, ".", "_" or "-", starts with a letter or digit, and is not a UUID',
      details: { field: 'tag' },
    });
  }
  return tag;
}

export async function addTag(
  ctx: EngineContext,
  input: { projectId: string; snapshotId: string; tag: string; actor: Actor },
): Promise<{ tag: string; snapshotId: string }> {
  const tag = validateTag(input.tag);
  const snapshot = await getSnapshot(ctx, input.projectId, input.snapshotId);
  await ctx.repository.snapshots.addTag(input.projectId, snapshot.snapshotId, tag);
  return { tag, snapshotId: snapshot.snapshotId };
}

export async function listTags(ctx: EngineContext, projectId: string): Promise<Array<{ tag: string; snapshotId: string }>> {
  await ctx.requireProject(projectId);
  return ctx.repository.snapshots.listTags(projectId);
}

export async function removeTag(ctx: EngineContext, input: { projectId: string; tag: string; actor: Actor }): Promise<void> {
  await ctx.requireProject(input.projectId);
  const tag = validateTag(input.tag);
  if (!(await ctx.repository.snapshots.removeTag(input.projectId, tag))) {
    throw new StrataError('TAG_NOT_FOUND', { details: { tag } });
  }
}
