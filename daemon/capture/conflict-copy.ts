// Where a captured file goes when the project's tree refuses its path because of a change made
// elsewhere: a directory there now (files pulled below the name this workstation made a file), or a
// file at a name above it. The user's bytes are kept as a conflict copy, as an edit against another
// edit is, and the workstation then shows the project's tree. Shared by watch mode (pipeline.ts) and
// mount mode (mount/reconciler.ts), which each decide first whether the refusal is their own doing
// still in flight (a deletion not yet recorded) rather than a change from elsewhere.
import type { Engine } from '../../engine/engine-api.js';
import { isStrataError } from '../../engine/errors.js';
import { conflictCopyPath } from '../../engine/commands/sync-versions.js';

/** Why the engine refused a write of a file at its path; null: not for the shape of the tree. */
export type TreeRefusal = { kind: 'directory' } | { kind: 'file-above'; above: string };

export function treeRefusal(path: string, error: unknown): TreeRefusal | null {
  if (isStrataError(error, 'PATH_IS_DIRECTORY')) return { kind: 'directory' };
  const above = isStrataError(error, 'PATH_EXISTS') ? error.details?.['conflictingPath'] : undefined;
  if (typeof above === 'string' && path.startsWith(`${above}/`)) return { kind: 'file-above', above };
  return null;
}

/** A conflict copy name of `path` that the engine does not have yet (the 20th is taken regardless). */
export async function freeConflictCopy(engine: Engine, projectId: string, path: string, workstation: string, nowMs: number): Promise<string> {
  const at = new Date(nowMs).toISOString();
  for (let n = 1; ; n++) {
    const copy = conflictCopyPath(path, workstation, at, n);
    if (n >= 20 || (await engine.stat({ projectId, path: copy })) === null) return copy;
  }
}

/**
 * Where the file refused at `path` is kept: a conflict copy of its own name when the project has a
 * directory there (the sync model's defect 4, seed 4000), or below a conflict copy of the name above
 * when the project has a file there (seed 5000), as the server keeps such a file (sync-versions.ts).
 */
export async function conflictCopyFor(engine: Engine, projectId: string, path: string, refusal: TreeRefusal, workstation: string, nowMs: number): Promise<string> {
  if (refusal.kind === 'directory') return freeConflictCopy(engine, projectId, path, workstation, nowMs);
  return (await freeConflictCopy(engine, projectId, refusal.above, workstation, nowMs)) + path.slice(refusal.above.length);
}

/** What a host logs when it keeps a refused file as a conflict copy (watch mode and the mount alike). */
export function keptAsConflictCopy(refusal: TreeRefusal): string {
  return refusal.kind === 'directory'
    ? 'this file stands where the project has a directory with files made elsewhere: it is kept as a conflict copy'
    : 'this file is below a directory where the project has a file changed elsewhere: it is kept below a conflict copy of the directory';
}
