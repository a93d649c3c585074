// The git commit ids of pushed commits, as the project will export them: each commit's changes
// applied to the project's tree in git terms, then its id from that tree, its parent and its
// identity lines. IdsAhead does it while the push streams in, on the guess that the push continues
// the project's tip (what `strata git push` sends): ~35 ms of a 300-commit push then overlap the
// reading instead of following it (bench/git-push.ts). The receiver uses its ids only if the guess
// held for exactly the commits that ended up on main, and works them out again otherwise.
import { StrataError } from '../errors.js';
import type { ContentHash } from '../types.js';
import { gitModeOf } from './export-commit.js';
import { type GitTree, gitCommitId } from './object-ids.js';
import type { Continues, ReceivedChange, ReceivedCommit, ReceivedHistory } from './receive-stream.js';

/** Applies one commit's changes; `oidBlobs` names the blobs a change may refer to by id (the project's). */
export function applyToTree(tree: GitTree, changes: ReceivedChange[], oidBlobs: Map<string, ContentHash>): void {
  for (const change of changes) {
    if (change.kind === 'modify') {
      const id = 'oid' in change.blob ? change.blob.oid : change.blob.gitId;
      if ('oid' in change.blob && !oidBlobs.has(id)) {
        throw new StrataError('GIT_NOT_FAST_FORWARD', { message: `The push refers to blob ${id}, which the project does not have`, details: { blob: id } });
      }
      tree.set(change.path, gitModeOf(change), id);
    } else if (change.kind === 'delete') {
      tree.delete(change.path);
    } else if (change.kind === 'deleteall') {
      for (const path of tree.paths()) tree.delete(path);
    } else {
      const source = tree.get(change.from);
      if (source === null) throw new StrataError('GIT_STREAM_INVALID', { message: `${change.kind} from ${change.from}, which does not exist`, details: { reason: 'missing source' } });
      if (change.kind === 'rename') tree.delete(change.from);
      tree.set(change.to, source.mode, source.id);
    }
  }
}

export function pushedCommitId(tree: GitTree, parent: string | null, commit: ReceivedCommit): string {
  return gitCommitId({ tree: tree.rootId(), parent, author: commit.author, committer: commit.committer, message: commit.message });
}

export class IdsAhead {
  readonly #ids: string[] = [];
  readonly #seen: ReceivedCommit[] = [];
  #alive = true;
  #parent: string | null;

  /** `tree`: the project's tree at `tip` (changed as commits arrive: the caller's copy is spent). */
  constructor(
    readonly tree: GitTree,
    private readonly tip: string | null,
    private readonly oidBlobs: Map<string, ContentHash>,
  ) {
    this.#parent = tip;
  }

  /** Whether the tree given to the constructor was changed (it then no longer is the tip's). */
  get used(): boolean {
    return this.#seen.length > 0 || !this.#alive;
  }

  /** A commit written to main, as readPushedHistory announces it. */
  add(commit: ReceivedCommit, continues: Continues): void {
    if (!this.#alive) return;
    const expected = this.#seen.length > 0 ? continues.kind === 'previous' : this.tip === null ? continues.kind === 'root' : continues.kind === 'oid' && continues.oid === this.tip;
    if (!expected) {
      this.#alive = false;
      return;
    }
    try {
      applyToTree(this.tree, commit.changes, this.oidBlobs);
    } catch {
      this.#alive = false; // the receiver reports it, working the ids out again
      return;
    }
    const id = pushedCommitId(this.tree, this.#parent, commit);
    this.#ids.push(id);
    this.#seen.push(commit);
    this.#parent = id;
  }

  /** The ids of `pushed.commits`, if they are exactly the commits seen, continuing the tip; else null. */
  result(pushed: ReceivedHistory): string[] | null {
    if (!this.#alive || pushed.base !== this.tip || pushed.commits.length !== this.#seen.length) return null;
    for (const [i, commit] of pushed.commits.entries()) if (commit !== this.#seen[i]) return null;
    return this.#ids;
  }
}
