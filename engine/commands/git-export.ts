// A snapshot chain in git terms (docs/design.md §5): one commit per snapshot on refs/heads/main, tags as
// lightweight git tags, datasets as their manifest text. Each commit carries only its changes against
// the previous snapshot (the repository's snapshot diff), so a stream is as long as the history's
// changes, not files × commits, and memory stays constant: the writer streams every blob.
//
// Determinism: author and committer are the snapshot's actor (`name <id@strata>`) and time (UTC);
// messages are the snapshot messages, byte for byte. The same chain always exports to the same commit
// ids, an export up to an older snapshot is a prefix of a newer one, and gitChain computes those ids
// without git (engine/git/object-ids.ts).
import type { EngineContext } from '../context.js';
import { StrataError } from '../errors.js';
import { commitIdents, type ExportChange, type ExportCommit, gitModeOf } from '../git/export-commit.js';
import { writeFastImport } from '../git/fast-import-writer.js';
import { GitTree, gitBlobId, gitCommitId } from '../git/object-ids.js';
import type { ParentChange } from '../ports/metadata-repository.js';
import type { ContentHash, Snapshot, SnapshotEntry } from '../types.js';

const ENTRY_PAGE = 1000;
const SMALL_CONTENT_BYTES = 256 * 1024;
const PREFETCH = 256;
const WINDOWS_AHEAD = 2;
const CHANGE_WINDOW = 256;
const LOOK_AHEAD = 64;

/** Pulls up to `depth` items from `source` before the consumer asks for them. */
async function* lookAhead<T>(source: AsyncIterable<T>, depth: number): AsyncGenerator<T> {
  const iterator = source[Symbol.asyncIterator]();
  const buffered: T[] = [];
  let done = false;
  const fill = async () => {
    while (!done && buffered.length < depth) {
      const next = await iterator.next();
      if (next.done === true) done = true;
      else buffered.push(next.value);
    }
  };
  await fill();
  while (buffered.length > 0) {
    const item = buffered.shift()!;
    await fill();
    yield item;
  }
}

export interface ChainCommit {
  snapshot: Snapshot;
  commitId: string;
}

/**
 * The chain up to `snapshotId` (or after `afterSnapshotId`, exclusive) as a fast-import stream. An
 * incremental export continues from the after-snapshot's commit, so importing it on top of an earlier
 * export gives the same commit ids as a full export.
 */
export async function gitExport(ctx: EngineContext, input: { projectId: string; snapshotId: string; afterSnapshotId?: string }): Promise<AsyncIterable<Uint8Array>> {
  const chain = await snapshotChain(ctx, input.projectId, input.snapshotId);
  let start = 0;
  let parentCommitId: string | undefined;
  let previous: Snapshot | null = null;
  if (input.afterSnapshotId !== undefined) {
    const index = chain.findIndex((s) => s.snapshotId === input.afterSnapshotId);
    if (index === -1) throw new StrataError('SNAPSHOT_NOT_FOUND', { message: 'The base snapshot is not in this chain', details: { snapshotId: input.afterSnapshotId } });
    const commits = await gitChain(ctx, input.projectId, chain.slice(0, index + 1));
    parentCommitId = commits[index]!.commitId;
    previous = chain[index]!;
    start = index + 1;
  }
  const sizes = new Map<ContentHash, number>();
  const prefetch = new SmallContentPrefetch(ctx);
  const onContent = (hash: ContentHash, size: number) => {
    if (sizes.has(hash)) return;
    sizes.set(hash, size);
    if (size <= SMALL_CONTENT_BYTES) prefetch.announce(hash);
  };
  // Commits are prepared a few ahead of the writer, so the blobs they announce fill whole prefetch
  // windows across commit boundaries (most commits change a handful of files).
  return writeFastImport(lookAhead(exportCommits(ctx, input.projectId, chain.slice(start), previous, onContent), LOOK_AHEAD), {
    // Small contents (most of a source tree) as verified buffers, fetched a window at a time: a
    // stream per blob cost more than the blob (measured: 90 µs per blob with streams, the export 3.4x
    // slower than git fast-export; see bench/git-export-project.ts).
    openContent: async (hash) => {
      const size = sizes.get(hash as ContentHash);
      if (size !== undefined && size <= SMALL_CONTENT_BYTES) return [await prefetch.take(hash as ContentHash)];
      return ctx.store.open(hash as ContentHash) as Promise<AsyncIterable<Uint8Array>>;
    },
    ...(parentCommitId === undefined ? {} : { parentCommitId }),
  });
}

/** The chain ending at `snapshotId`, oldest first (null: the project's tip; [] if no snapshot). */
export async function snapshotChain(ctx: EngineContext, projectId: string, snapshotId: string | null): Promise<Snapshot[]> {
  await ctx.requireProject(projectId);
  const tip = snapshotId === null ? await ctx.repository.snapshots.tip(projectId) : await ctx.repository.snapshots.get(projectId, snapshotId);
  if (!tip) {
    if (snapshotId === null) return [];
    throw new StrataError('SNAPSHOT_NOT_FOUND', { details: { snapshotId } });
  }
  const chain: Snapshot[] = [tip];
  for (let parent = tip.parentId; parent !== null; ) {
    const snapshot = await ctx.repository.snapshots.get(projectId, parent);
    if (!snapshot) throw new StrataError('INTERNAL', { message: `Snapshot ${parent} of the chain is missing` });
    chain.push(snapshot);
    parent = snapshot.parentId;
  }
  return chain.reverse();
}

/** The git commit id of every snapshot of `chain` (which starts at the root), as a fast-import of our export creates them. */
export async function gitChain(ctx: EngineContext, projectId: string, chain: Snapshot[]): Promise<ChainCommit[]> {
  return (await gitChainState(ctx, projectId, chain)).commits;
}

/** gitChain, plus the git tree of the last snapshot and the blob id of every content on the way. */
export async function gitChainState(
  ctx: EngineContext,
  projectId: string,
  chain: Snapshot[],
): Promise<{ commits: ChainCommit[]; tree: GitTree; blobIds: Map<ContentHash, string> }> {
  const tree = new GitTree();
  const blobIds = new Map<ContentHash, string>();
  const result: ChainCommit[] = [];
  let parent: string | null = null;
  let index = 0;
  for await (const commit of exportCommits(ctx, projectId, chain, null)) {
    for (const change of commit.changes) {
      if (change.kind === 'delete') {
        tree.delete(change.path);
        continue;
      }
      const hash = change.contentHash as ContentHash;
      let blob = blobIds.get(hash) ?? ctx.gitBlobIds.get(hash);
      if (blob === undefined) {
        blob = await gitBlobId(change.size, (await ctx.store.open(hash)) as AsyncIterable<Uint8Array>);
        ctx.gitBlobIds.set(hash, blob);
      }
      blobIds.set(hash, blob);
      tree.set(change.path, gitModeOf(change), blob);
    }
    const commitId = gitCommitId({ tree: tree.rootId(), parent, ...commitIdents(commit), message: commit.message });
    result.push({ snapshot: chain[index++]!, commitId });
    parent = commitId;
  }
  return { commits: result, tree, blobIds };
}

/**
 * Reads small contents a window at a time (up to PREFETCH of them per request) in the order the
 * commits announced them, one window ahead; memory stays bounded by two windows of
 * PREFETCH × SMALL_CONTENT_BYTES.
 */
class SmallContentPrefetch {
  private readonly queue: ContentHash[] = [];
  private readonly ready = new Map<ContentHash, Buffer>();
  /** windows being read ahead, oldest first */
  private readonly ahead: Array<{ hashes: Set<ContentHash>; promise: Promise<Map<ContentHash, Buffer>> }> = [];

  constructor(private readonly ctx: EngineContext) {}

  /** A small content the writer will ask for (each distinct content is announced once). */
  announce(hash: ContentHash): void {
    this.queue.push(hash);
  }

  async take(hash: ContentHash): Promise<Buffer> {
    let data = this.ready.get(hash);
    const pending = data === undefined ? this.ahead.findIndex((w) => w.hashes.has(hash)) : -1;
    if (pending !== -1) {
      for (const window of this.ahead.splice(0, pending + 1)) {
        for (const [h, buffer] of await window.promise) this.ready.set(h, buffer);
      }
      data = this.ready.get(hash);
    }
    if (data === undefined) {
      const at = this.queue.indexOf(hash);
      if (at !== -1) this.queue.splice(at, 1);
      for (const [h, buffer] of await this.read([hash, ...this.queue.splice(0, PREFETCH - 1)])) this.ready.set(h, buffer);
      data = this.ready.get(hash)!;
    }
    this.ready.delete(hash);
    // Keep windows in flight, so reading (in the store's reader threads) overlaps with writing.
    while (this.ahead.length < WINDOWS_AHEAD && this.queue.length > 0 && this.ready.size < PREFETCH) {
      const hashes = this.queue.splice(0, PREFETCH);
      const promise = this.read(hashes);
      promise.catch(() => {}); // its failure surfaces when the window is taken
      this.ahead.push({ hashes: new Set(hashes), promise });
    }
    return data;
  }

  private async read(hashes: ContentHash[]): Promise<Map<ContentHash, Buffer>> {
    if (this.ctx.store.readBuffers !== undefined) return this.ctx.store.readBuffers(hashes);
    const found = new Map<ContentHash, Buffer>();
    for (const hash of hashes) found.set(hash, await this.ctx.store.readBuffer(hash));
    return found;
  }
}

async function* exportCommits(
  ctx: EngineContext,
  projectId: string,
  chain: Snapshot[],
  base: Snapshot | null,
  onContent?: (hash: ContentHash, size: number) => void,
): AsyncGenerator<ExportCommit> {
  let previous = base;
  // Change sets are read a window of snapshots at a time (one query for many).
  let window: Array<ParentChange[] | null> = [];
  for (const [index, snapshot] of chain.entries()) {
    if (index % CHANGE_WINDOW === 0) {
      window = await ctx.repository.snapshots.changesFromParents(projectId, chain.slice(index, index + CHANGE_WINDOW).map((s) => s.snapshotId));
    }
    const recorded = window[index % CHANGE_WINDOW] ?? null;
    const changes: ExportChange[] = [];
    if (previous === null) {
      for await (const entry of snapshotEntries(ctx, snapshot.snapshotId)) changes.push(await modify(ctx, entry, onContent));
    } else {
      const items =
        (snapshot.parentId === previous.snapshotId ? recorded : null) ?? (await ctx.repository.snapshots.diff(projectId, previous.snapshotId, snapshot.snapshotId));
      // (A path listed with unchanged content becomes an `M` of the same blob: a no-op for git.)
      for (const item of items) {
        changes.push(item.after === null ? { kind: 'delete', path: item.path } : await modify(ctx, item.after, onContent));
      }
    }
    yield {
      message: snapshot.message,
      actor: { name: snapshot.actor.name, email: `${snapshot.actor.id}@strata` },
      timeMs: Date.parse(snapshot.timestamp),
      tags: [...snapshot.tags].sort(),
      changes,
      ...(snapshot.git === undefined ? {} : { ident: snapshot.git }),
    };
    previous = snapshot;
  }
}

/**
 * A dataset goes to git as its manifest (the object its version points to), with the manifest's size;
 * a symbolic link as mode 120000 with its target as the blob, which is what git itself stores for one.
 */
async function modify(ctx: EngineContext, entry: SnapshotEntry, onContent?: (hash: ContentHash, size: number) => void): Promise<ExportChange> {
  let size = entry.size;
  if (entry.dataset) {
    const info = await ctx.store.stat(entry.contentHash);
    if (!info) throw new StrataError('CONTENT_NOT_FOUND', { details: { hash: entry.contentHash, path: entry.path } });
    size = info.size;
  }
  onContent?.(entry.contentHash, size);
  // `symlink` only when set: a chain without links exports exactly as before.
  return { kind: 'modify', path: entry.path, contentHash: entry.contentHash, size, executable: entry.executable, ...(entry.symlink ? { symlink: true } : {}) };
}

async function* snapshotEntries(ctx: EngineContext, snapshotId: string): AsyncGenerator<SnapshotEntry> {
  let cursor: string | undefined;
  do {
    const page = await ctx.repository.snapshots.entries(snapshotId, { limit: ENTRY_PAGE, ...(cursor === undefined ? {} : { cursor }) });
    yield* page.items;
    cursor = page.nextCursor;
  } while (cursor !== undefined);
}
