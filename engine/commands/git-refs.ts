// The project's chain as git refs (tip and tags with their commit ids), and the upload of what a
// client that already has some commit of the chain is missing (an incremental export).
import type { EngineContext } from '../context.js';
import type { GitRefs } from '../engine-api.js';
import { StrataError } from '../errors.js';
import { gitChain, gitExport, snapshotChain } from './git-export.js';

export async function gitRefs(ctx: EngineContext, projectId: string): Promise<GitRefs> {
  const chain = await snapshotChain(ctx, projectId, null);
  const commits = await gitChain(ctx, projectId, chain);
  const tip = commits[commits.length - 1];
  const tags = commits.flatMap((c) => c.snapshot.tags.map((tag) => ({ tag, snapshotId: c.snapshot.snapshotId, commitId: c.commitId })));
  tags.sort((a, b) => (a.tag < b.tag ? -1 : a.tag > b.tag ? 1 : 0));
  return {
    ref: 'refs/heads/main',
    head: tip === undefined ? null : { snapshotId: tip.snapshot.snapshotId, seq: tip.snapshot.seq, commitId: tip.commitId },
    tags,
  };
}

/**
 * The whole chain, or (with `haveCommitId`, a commit of the chain the client has) only the snapshots
 * after it, continuing from that commit. A commit the chain does not contain is GIT_UNKNOWN_COMMIT:
 * the client's history has diverged from the project's.
 */
export async function gitUpload(ctx: EngineContext, input: { projectId: string; haveCommitId?: string }): Promise<AsyncIterable<Uint8Array>> {
  const chain = await snapshotChain(ctx, input.projectId, null);
  const tip = chain[chain.length - 1];
  if (tip === undefined) {
    if (input.haveCommitId !== undefined) throw unknownCommit(input.haveCommitId);
    return emptyStream();
  }
  if (input.haveCommitId === undefined) return gitExport(ctx, { projectId: input.projectId, snapshotId: tip.snapshotId });
  const commits = await gitChain(ctx, input.projectId, chain);
  const have = commits.find((c) => c.commitId === input.haveCommitId);
  if (have === undefined) throw unknownCommit(input.haveCommitId);
  if (have.snapshot.snapshotId === tip.snapshotId) return emptyStream();
  return gitExport(ctx, { projectId: input.projectId, snapshotId: tip.snapshotId, afterSnapshotId: have.snapshot.snapshotId });
}

function unknownCommit(commitId: string): StrataError {
  return new StrataError('GIT_UNKNOWN_COMMIT', { details: { commitId } });
}

async function* emptyStream(): AsyncGenerator<Uint8Array> {
  yield Buffer.from('feature done\ndone\n');
}
