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
import { chainMoved, isChainMoved } from '../chain-moved.js';
import { isStrataError, StrataError } from '../errors.js';
import { applyToTree, IdsAhead, pushedCommitId } from '../git/pushed-ids.js';
import { type ReceivedBlob, type ReceivedCommit, type ReceivedHistory, readPushedHistory } from '../git/receive-stream.js';
import type { ImportStep, VersionCommit } from '../ports/metadata-repository.js';
import type { Actor, ContentHash, Entry } from '../types.js';
import { gitChainState, snapshotChain } from './git-export.js';
import { checkStoredSymlinkTarget } from '../symlink-target.js';
import { quoteSafely } from '../unsafe-text.js';
import { validateTag } from './tags.js';


/** Manifests are small; a blob larger than this is never taken for one. */
const MAX_MANIFEST_BYTES = 64 * 1024 * 1024;

export async function gitReceive(ctx: EngineContext, input: { projectId: string; actor: Actor; stream: AsyncIterable<Uint8Array> }): Promise<GitReceiveResult> {
  await ctx.requireProject(input.projectId);
  // The project's chain in git terms first, so that the pushed commits' ids are worked out as they
  // stream in (pushed-ids.ts); checked again after the read, in case a snapshot came meanwhile.
  let chain = await snapshotChain(ctx, input.projectId, null);
  let state = await gitChainState(ctx, input.projectId, chain);
  const idsOf = (s: typeof state) => new Map<string, ContentHash>([...s.blobIds].map(([hash, id]) => [id, hash]));
  const tipBefore = state.commits.at(-1)?.commitId ?? null;
  let oidBlobs = idsOf(state);
  const ahead = new IdsAhead(state.tree, tipBefore, oidBlobs);
  const pushed = await ctx.gcLock.shared(() =>
    readPushedHistory(input.stream, (bytes) => ctx.store.put(bytes), (datas) => ctx.store.putBuffers(datas), { onMainCommit: (commit, continues) => ahead.add(commit, continues) }),
  );
  // git told us each blob's id: later replays of this chain need not read them back.
  for (const commit of pushed.commits) for (const change of commit.changes) if (change.kind === 'modify' && !('oid' in change.blob)) ctx.gitBlobIds.set(change.blob.hash, change.blob.gitId);
  if ((await ctx.repository.snapshots.tip(input.projectId))?.snapshotId !== chain.at(-1)?.snapshotId) {
    chain = await snapshotChain(ctx, input.projectId, null);
    state = await gitChainState(ctx, input.projectId, chain);
    oidBlobs = idsOf(state);
  }
  const idsAhead = (state.commits.at(-1)?.commitId ?? null) === tipBefore ? ahead.result(pushed) : null;
  // IdsAhead worked on the tip's tree: if it did and its ids are not taken, the tip's tree is rebuilt.
  const tipTreeSpent = ahead.used && state.tree === ahead.tree;
  try {
    return await applyPushed(ctx, input, pushed, { chain, state, oidBlobs, idsAhead, tipTreeSpent });
  } catch (error) {
    // Another push landed between our read of the chain and our commit, most often this very push
    // sent to another replica: judged again against the chain as it is now, it is already present.
    if (!isChainMoved(error)) throw error;
    chain = await snapshotChain(ctx, input.projectId, null);
    state = await gitChainState(ctx, input.projectId, chain);
    return applyPushed(ctx, input, pushed, { chain, state, oidBlobs: idsOf(state), idsAhead: null, tipTreeSpent: false });
  }
}

interface ChainRead {
  chain: Awaited<ReturnType<typeof snapshotChain>>;
  state: Awaited<ReturnType<typeof gitChainState>>;
  /** git blob id → content hash, of the chain's blobs */
  oidBlobs: Map<string, ContentHash>;
  /** the pushed commits' ids if worked out during the read (they continue the tip), else null */
  idsAhead: string[] | null;
  /** whether working them out changed `state.tree` */
  tipTreeSpent: boolean;
}

/**
 * The pushed commits compared with the chain as read, and the new ones applied (importChain) on the
 * condition that the chain's tip is still the one read.
 */
async function applyPushed(
  ctx: EngineContext,
  input: { projectId: string; actor: Actor },
  pushed: ReceivedHistory,
  { chain, state, oidBlobs, idsAhead, tipTreeSpent }: ChainRead,
): Promise<GitReceiveResult> {
  const ours = state.commits;

  // Where the pushed commits start in our chain.
  let start: number;
  if (idsAhead !== null) start = ours.length;
  else if (pushed.base === null) start = 0;
  else {
    const index = ours.findIndex((c) => c.commitId === pushed.base);
    if (index === -1) throw new StrataError('GIT_NOT_FAST_FORWARD', { message: `The pushed history continues ${pushed.base}, which is not in the project's chain`, details: { base: pushed.base } });
    start = index + 1;
  }

  // Replay from the base (unless done during the read): the tree there, then each pushed commit's id.
  const tree = idsAhead !== null ? null : start === ours.length && !tipTreeSpent ? state.tree : (await gitChainState(ctx, input.projectId, chain.slice(0, start))).tree;
  let parent = start === 0 ? null : ours[start - 1]!.commitId;
  const fresh: Array<{ commit: ReceivedCommit; commitId: string }> = [];
  let alreadyPresent = 0;
  for (const [i, commit] of pushed.commits.entries()) {
    let commitId: string;
    if (tree === null) commitId = idsAhead![i]!;
    else {
      applyToTree(tree, commit.changes, oidBlobs);
      commitId = pushedCommitId(tree, parent, commit);
    }
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

  // Every commit's records and snapshot are worked out first (reads only), then applied in one
  // transaction: a push lands whole or not at all, and costs one durable commit instead of two per
  // commit (bench/git-push.ts).
  const planned = new PlannedTree(ctx, input.projectId);
  const steps: ImportStep[] = [];
  for (const { commit } of fresh) {
    steps.push({
      commits: await planCommit(ctx, planned, input.actor, commit, oidBlobs),
      snapshot: { snapshotId: ctx.ids.uuid(), projectId: input.projectId, message: commit.message, actor: input.actor, timestamp: ctx.now(), git: { author: commit.author, committer: commit.committer } },
      tags: commit.tags.map(validateTag),
    });
  }
  const applied: GitReceiveResult['applied'] = [];
  if (steps.length > 0) {
    await ctx.batcher.drain();
    // Applied only on the chain it was planned on: the same push landing meanwhile (another request or
    // replica) would pass every record's precondition, since the planning read its records.
    const plannedOn = chain.at(-1)?.snapshotId ?? null;
    const snapshots = await ctx.gcLock.shared(() => ctx.repository.snapshots.importChain(input.projectId, steps, plannedOn));
    for (const [i, snapshot] of snapshots.entries()) applied.push({ snapshotId: snapshot.snapshotId, commitId: fresh[i]!.commitId });
    for (const step of steps) for (const commit of step.commits) ctx.retention.schedule(input.projectId, commit.record.path);
  }
  const last = applied[applied.length - 1] ?? (ours.length > 0 ? { snapshotId: ours[ours.length - 1]!.snapshot.snapshotId, commitId: ours[ours.length - 1]!.commitId } : null);
  return { applied, alreadyPresent, head: last };
}

/** The tree must be exactly the tip snapshot's (or empty without one): pushed changes apply to it. */
async function assertSnapshotted(ctx: EngineContext, projectId: string, tipId: string | null): Promise<void> {
  await ctx.batcher.drain();
  const changed =
    tipId === null
      ? (await ctx.repository.versions.listEntries(projectId, { prefix: '', limit: 1 })).items.length > 0
      : (await ctx.repository.snapshots.diff(projectId, tipId, null)).length > 0;
  if (!changed) return;
  // A push that landed since the chain was read changed the files too: not the user's unsnapshotted work.
  const tip = (await ctx.repository.snapshots.tip(projectId))?.snapshotId ?? null;
  if (tip !== tipId) throw chainMoved(tipId, tip);
  throw new StrataError('GIT_UNSNAPSHOTTED_CHANGES');
}

/**
 * The project's entries as the planned commits leave them: what the database says, overlaid with the
 * records planned so far (none of which is committed before the whole push is).
 */
interface PlannedEntry {
  versionId: string;
  hash: ContentHash;
  size: number;
  executable: boolean;
  symlink: boolean;
  dataset: boolean;
}

class PlannedTree {
  readonly #planned = new Map<string, PlannedEntry | null>();

  constructor(
    private readonly ctx: EngineContext,
    readonly projectId: string,
  ) {}

  /** whether the project had no entries when planning began (a first push): nothing to look up */
  #empty: boolean | undefined;

  async get(path: string): Promise<PlannedEntry | null> {
    if (this.#planned.has(path)) return this.#planned.get(path)!;
    this.#empty ??= (await this.ctx.repository.versions.listEntries(this.projectId, { prefix: '', limit: 1 })).items.length === 0;
    if (this.#empty) return null;
    const entry = await this.ctx.repository.versions.getEntry(this.projectId, path);
    return entry === null
      ? null
      : { versionId: entry.versionId, hash: entry.contentHash, size: entry.size, executable: entry.executable, symlink: entry.symlink, dataset: entry.dataset };
  }

  async paths(): Promise<string[]> {
    const paths = new Set((await allEntries(this.ctx, this.projectId)).map((entry) => entry.path));
    for (const [path, entry] of this.#planned) {
      if (entry === null) paths.delete(path);
      else paths.add(path);
    }
    return [...paths];
  }

  set(path: string, record: VersionCommit['record']): void {
    this.#planned.set(
      path,
      record.contentHash === null
        ? null
        : { versionId: record.versionId, hash: record.contentHash, size: record.size, executable: record.executable, symlink: record.symlink, dataset: record.dataset },
    );
  }
}

/** One commit's changes as records (deletes first, as the exporter orders them), each expecting the path's planned state. */
async function planCommit(ctx: EngineContext, tree: PlannedTree, actor: Actor, commit: ReceivedCommit, oidBlobs: Map<string, ContentHash>): Promise<VersionCommit[]> {
  const { projectId } = tree;
  // The final state of each touched path: content, or null for gone.
  const target = new Map<string, { hash: ContentHash; size: number; executable: boolean; symlink: boolean; maybeManifest: boolean } | null>();
  const current = async (path: string) => {
    if (target.has(path)) return target.get(path)!;
    const entry = await tree.get(path);
    if (entry === null) return null;
    if (entry.dataset) throw new StrataError('GIT_NOT_REPRESENTABLE', { message: `Renaming or copying the dataset ${path} in git is not supported; rename it in Strata` });
    return { hash: entry.hash, size: entry.size, executable: entry.executable, symlink: entry.symlink, maybeManifest: true };
  };
  for (const change of commit.changes) {
    if (change.kind === 'modify') {
      const blob: Pick<ReceivedBlob, 'hash' | 'size' | 'maybeManifest'> = 'oid' in change.blob ? { ...(await sizedBlob(ctx, oidBlobs.get(change.blob.oid)!)), maybeManifest: true } : change.blob;
      target.set(change.path, { hash: blob.hash, size: blob.size, executable: change.executable, symlink: change.symlink, maybeManifest: blob.maybeManifest });
    } else if (change.kind === 'delete') {
      target.set(change.path, null);
    } else if (change.kind === 'deleteall') {
      for (const path of await tree.paths()) target.set(path, null);
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
    const before = await tree.get(path);
    const expectedCurrent = before === null ? null : before.versionId;
    if (content === null) {
      if (before !== null) deletes.push({ record: ctx.newVersion({ projectId, path, contentHash: null, size: 0, actor, kind: 'import' }), expectedCurrent });
      continue;
    }
    // A link (mode 120000) is never a dataset; its blob must be a target a checkout can create again.
    if (content.symlink) await checkLinkBlob(ctx, path, content.hash);
    // Only a blob that may be a manifest is read back to tell (one store read per file was 10% of a push).
    const dataset = content.maybeManifest && !content.symlink ? await datasetOf(ctx, content.hash, content.size) : null;
    const record = ctx.newVersion({
      projectId,
      path,
      contentHash: content.hash,
      size: dataset?.size ?? content.size,
      actor,
      kind: 'import',
      executable: content.executable,
      symlink: content.symlink,
      dataset: dataset !== null,
    });
    writes.push(dataset === null ? { record, expectedCurrent } : { record, expectedCurrent, shards: dataset.shards });
  }
  const batch = [...deletes, ...writes];
  for (const { record } of batch) tree.set(record.path, record);
  return batch;
}

async function checkLinkBlob(ctx: EngineContext, path: string, hash: ContentHash): Promise<void> {
  try {
    await checkStoredSymlinkTarget(ctx.store, hash, 'path');
  } catch (error) {
    if (!isStrataError(error, 'INVALID_SYMLINK_TARGET')) throw error;
    throw new StrataError('GIT_NOT_REPRESENTABLE', {
      message: `The push has a symbolic link at ${quoteSafely(path)} whose target no filesystem can hold (${String(error.details?.['reason'])}): a target is 1 to 4,095 bytes, none of them NUL`,
      details: { path: quoteSafely(path), reason: error.details?.['reason'] },
      cause: error,
    });
  }
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
