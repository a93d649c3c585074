// A batch of version commits cut into runs that a set-wise check can judge (pg-commit.ts): where a
// record whose path must be checked (VersionCommit.checkPath) meets a related path of the same batch.
import type { VersionCommit } from '../ports/metadata-repository.js';

// NUL cannot occur in Postgres text, so it cannot occur in a project id or path: a safe separator.
export const keyOf = (projectId: string, path: string): string => `${projectId}\u0000${path}`;

/** Whether the record's path must be free of a directory and of files above it (VersionCommit.checkPath). */
export function checksPath(commit: VersionCommit): boolean {
  return commit.checkPath === true && commit.historyOnly !== true && commit.record.contentHash !== null;
}

/**
 * A batch cut where a record whose path is checked meets a path of the run that is the same, above
 * or below it (in either order). Within a run, each checked path's conflicts then depend on the tree
 * as committed before the run alone, which one set-wise query can judge; the runs commit in order.
 * Batches of unrelated paths (nearly all) stay whole.
 */
export function runsForPathChecks(commits: VersionCommit[]): VersionCommit[][] {
  if (!commits.some(checksPath)) return [commits];
  const runs: VersionCommit[][] = [];
  let run: VersionCommit[] = [];
  const paths = new Set<string>();
  const checked = new Set<string>();
  const above = new Set<string>();
  const aboveChecked = new Set<string>();
  for (const commit of commits) {
    const { projectId, path } = commit.record;
    const ancestors = ancestorKeys(projectId, path);
    const key = keyOf(projectId, path);
    const check = checksPath(commit);
    const related = check
      ? paths.has(key) || above.has(key) || ancestors.some((a) => paths.has(a))
      : checked.has(key) || aboveChecked.has(key) || ancestors.some((a) => checked.has(a));
    if (related && run.length > 0) {
      runs.push(run);
      run = [];
      for (const set of [paths, checked, above, aboveChecked]) set.clear();
    }
    run.push(commit);
    paths.add(key);
    for (const a of ancestors) above.add(a);
    if (check) {
      checked.add(key);
      for (const a of ancestors) aboveChecked.add(a);
    }
  }
  runs.push(run);
  return runs;
}

function ancestorKeys(projectId: string, path: string): string[] {
  const keys: string[] = [];
  for (let slash = path.indexOf('/'); slash !== -1; slash = path.indexOf('/', slash + 1)) keys.push(keyOf(projectId, path.slice(0, slash)));
  return keys;
}
