// POST fs/git/receive: a pushed linear history becomes snapshots. Nothing changes unless the whole
// push is acceptable: the stream is read first (blobs into the store, commits checked for linearity),
// then every pushed commit's id is computed the way git computes it and compared with the project's
// chain — commits the project already has are skipped (re-sending a stream is not an error), a
// commit that differs from the project's at the same place is a non-fast-forward (409). Only then are
// the new commits applied, each as `import` versions plus a snapshot that keeps the commit's author
// and committer lines, so exporting the project again gives the very same commit ids.
import type { EngineContext } from '../context.js';
import type { GitReceiveResult } from '../engine-api.js';
import { parseManifest } from '../datasets/manifest.js';
import { StrataError } from '../errors.js';
import { type GitFileMode, type GitTree, gitCommitId } from '../git/object-ids.js';
import { type ReceivedBlob, type ReceivedChange, type ReceivedCommit, readPushedHistory } from '../git/receive-stream.js';
import type { VersionCommit } from '../ports/metadata-repository.js';
import type { Actor, ContentHash, Entry } from '../types.js';
import { gitChainState, snapshotChain } from './git-export.js';
import { validateTag } from './tags.js';


/** Manifests are small; a blob larger than this is never taken for one. */
const MAX_MANIFEST_BYTES = 64 * 1024 * 1024;

export async function gitReceive(ctx: EngineContext, input: { projectId: string; actor: Actor; stream: AsyncIterable<Uint8Array> }): Promise<GitReceiveResult> {
  await ctx.requireProject(input.projectId);
  const pushed = await ctx.gcLock.shared(() => readPushedHistory(input.stream, (bytes) => ctx.store.put(bytes)));
  const chain = await snapshotChain(ctx, input.projectId, null);
  const state = await gitChainState(ctx, input.projectId, chain);
  const ours = state.commits;

  // Where the pushed commits start in our chain.
  let start: number;
  if (pushed.base === null) start = 0;
  else {
    const index = ours.findIndex((c) => c.commitId === pushed.base);
    if (index === -1) throw new StrataError('GIT_NOT_FAST_FORWARD', { message: `The pushed history continues ${pushed.base}, which is not in the project's chain`, details: { base: pushed.base } });
    start = index + 1;
  }

  // Replay from the base: the tree there, then each pushed commit's id as git computes it.
  const tree = start === ours.length ? state.tree : (await gitChainState(ctx, input.projectId, chain.slice(0, start))).tree;
  const oidBlobs = new Map<string, ContentHash>([...state.blobIds].map(([hash, id]) => [id, hash]));
  let parent = start === 0 ? null : ours[start - 1]!.commitId;
  const fresh: Array<{ commit: ReceivedCommit; commitId: string }> = [];
  let alreadyPresent = 0;
  for (const [i, commit] of pushed.commits.entries()) {
    applyToTree(tree, commit.changes, oidBlobs);
    const commitId = gitCommitId({ tree: tree.rootId(), parent, author: commit.author, committer: commit.committer, message: commit.message });
    const existing = ours[start + i];
    // Divergence first: a root commit sent to a project with history (`git fast-export A..B` without
    // --reference-excluded-parents writes the first commit without its parent) must read as what it is.
    if (existing !== undefined && existing.commitId !== commitId) {
      const root = i === 0 && pushed.base === null;
      throw new StrataError('GIT_NOT_FAST_FORWARD', {
        message: root
          ? `The push starts with a commit that has no parent, but the project already has history (its first commit is ${existing.commitId}); push with \`strata git push\`, or export with \`git fast-export --reference-excluded-parents\``
          : `The pushed history diverges from the project's at ${existing.commitId}`,
        details: { ours: existing.commitId, theirs: commitId },
      });
    }
    if (commit.originalOid !== null && commit.originalOid !== commitId) {
      throw new StrataError('GIT_NOT_REPRESENTABLE', {
        message: `Commit ${commit.originalOid} carries something a snapshot cannot keep (a signature, extra headers); it would come back as ${commitId}`,
        details: { commitId: commit.originalOid },
      });
    }
    if (existing !== undefined) {
      alreadyPresent += 1;
    } else {
      fresh.push({ commit, commitId });
    }
    parent = commitId;
  }
  if (fresh.length > 0) await assertSnapshotted(ctx, input.projectId, chain.length === 0 ? null : chain[chain.length - 1]!.snapshotId);

  const applied: GitReceiveResult['applied'] = [];
  for (const { commit, commitId } of fresh) {
    await applyCommit(ctx, input.projectId, input.actor, commit, oidBlobs);
    await ctx.batcher.drain();
    const snapshot = await ctx.repository.snapshots.create({
      snapshotId: ctx.ids.uuid(),
      projectId: input.projectId,
      message: commit.message,
      actor: input.actor,
      timestamp: ctx.now(),
      git: { author: commit.author, committer: commit.committer },
    });
    for (const tag of commit.tags) await ctx.repository.snapshots.addTag(input.projectId, snapshot.snapshotId, validateTag(tag));
    applied.push({ snapshotId: snapshot.snapshotId, commitId });
  }
  const last = applied[applied.length - 1] ?? (ours.length > 0 ? { snapshotId: ours[ours.length - 1]!.snapshot.snapshotId, commitId: ours[ours.length - 1]!.commitId } : null);
  return { applied, alreadyPresent, head: last };
}

function applyToTree(tree: GitTree, changes: ReceivedChange[], oidBlobs: Map<string, ContentHash>): void {
  for (const change of changes) {
    if (change.kind === 'modify') {
      const id = 'oid' in change.blob ? change.blob.oid : change.blob.gitId;
      if ('oid' in change.blob && !oidBlobs.has(id)) {
        throw new StrataError('GIT_NOT_FAST_FORWARD', { message: `The push refers to blob ${id}, which the project does not have`, details: { blob: id } });
      }
      tree.set(change.path, (change.executable ? '100755' : '100644') as GitFileMode, id);
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

/** The tree must be exactly the tip snapshot's (or empty without one): pushed changes apply to it. */
async function assertSnapshotted(ctx: EngineContext, projectId: string, tipId: string | null): Promise<void> {
  await ctx.batcher.drain();
  const changed =
    tipId === null
      ? (await ctx.repository.versions.listEntries(projectId, { prefix: '', limit: 1 })).items.length > 0
      : (await ctx.repository.snapshots.diff(projectId, tipId, null)).length > 0;
  if (changed) throw new StrataError('GIT_UNSNAPSHOTTED_CHANGES');
}

/** One commit's changes as one atomic batch of records (deletes first, as the exporter orders them). */
async function applyCommit(ctx: EngineContext, projectId: string, actor: Actor, commit: ReceivedCommit, oidBlobs: Map<string, ContentHash>): Promise<void> {
  // The final state of each touched path: content, or null for gone.
  const target = new Map<string, { hash: ContentHash; size: number; executable: boolean } | null>();
  const current = async (path: string) => (target.has(path) ? target.get(path)! : await entryOf(ctx, projectId, path));
  for (const change of commit.changes) {
    if (change.kind === 'modify') {
      const blob: Pick<ReceivedBlob, 'hash' | 'size'> = 'oid' in change.blob ? await sizedBlob(ctx, oidBlobs.get(change.blob.oid)!) : change.blob;
      target.set(change.path, { hash: blob.hash, size: blob.size, executable: change.executable });
    } else if (change.kind === 'delete') {
      target.set(change.path, null);
    } else if (change.kind === 'deleteall') {
      for (const entry of await allEntries(ctx, projectId)) target.set(entry.path, null);
      for (const path of target.keys()) target.set(path, null);
    } else {
      const source = await current(change.from);
      if (change.kind === 'rename') target.set(change.from, null);
      target.set(change.to, source);
    }
  }
  const deletes: VersionCommit[] = [];
  const writes: VersionCommit[] = [];
  for (const [path, content] of target) {
    const before = await ctx.repository.versions.getEntry(projectId, path);
    const expectedCurrent = before === null ? null : before.versionId;
    if (content === null) {
      if (before !== null) deletes.push({ record: ctx.newVersion({ projectId, path, contentHash: null, size: 0, actor, kind: 'import' }), expectedCurrent });
      continue;
    }
    const dataset = await datasetOf(ctx, content.hash, content.size);
    const record = ctx.newVersion({ projectId, path, contentHash: content.hash, size: dataset?.size ?? content.size, actor, kind: 'import', executable: content.executable, dataset: dataset !== null });
    writes.push(dataset === null ? { record, expectedCurrent } : { record, expectedCurrent, shards: dataset.shards });
  }
  const batch = [...deletes, ...writes];
  if (batch.length === 0) return;
  const results = await ctx.gcLock.shared(() => ctx.batcher.submitAtomic(batch));
  if (!results.every((r) => r.ok)) throw new StrataError('STALE_BASE_VERSION', { message: 'The project changed while the push was applied; pull and push again' });
  for (const commit of batch) ctx.retention.schedule(projectId, commit.record.path);
}

async function entryOf(ctx: EngineContext, projectId: string, path: string) {
  const entry = await ctx.repository.versions.getEntry(projectId, path);
  if (entry === null) return null;
  if (entry.dataset) throw new StrataError('GIT_NOT_REPRESENTABLE', { message: `Renaming or copying the dataset ${path} in git is not supported; rename it in Strata` });
  return { hash: entry.contentHash, size: entry.size, executable: entry.executable };
}

async function allEntries(ctx: EngineContext, projectId: string): Promise<Entry[]> {
  const out: Entry[] = [];
  let cursor: string | undefined;
  do {
    const page = await ctx.repository.versions.listEntries(projectId, { prefix: '', limit: 1000, ...(cursor === undefined ? {} : { cursor }) });
    out.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return out;
}

async function sizedBlob(ctx: EngineContext, hash: ContentHash): Promise<{ hash: ContentHash; size: number }> {
  const info = await ctx.store.stat(hash);
  if (info === null) throw new StrataError('CONTENT_NOT_FOUND', { details: { hash } });
  return { hash, size: info.size };
}

/**
 * A pushed blob that is a canonical dataset manifest whose shards are all stored is that dataset again
 * (a clone carries datasets as their manifest text); anything else is an ordinary file.
 */
async function datasetOf(ctx: EngineContext, hash: ContentHash, size: number): Promise<{ size: number; shards: ContentHash[] } | null> {
  if (size > MAX_MANIFEST_BYTES || size < 20) return null;
  const head = await ctx.store.open(hash, { start: 0, end: 19 });
  let prefix = '';
  for await (const chunk of head as AsyncIterable<Buffer>) prefix += chunk.toString('latin1');
  if (!prefix.startsWith('{"format":"strata.da')) return null;
  let manifest: ReturnType<typeof parseManifest>;
  try {
    manifest = parseManifest(await ctx.store.readBuffer(hash));
  } catch {
    return null;
  }
  const shards = [...new Set(manifest.shards.map((s) => s.hash))];
  for (const shard of shards) if (!(await ctx.store.has(shard))) return null;
  return { size: manifest.size, shards };
}
