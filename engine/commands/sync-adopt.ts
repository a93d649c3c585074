// The workstation's side of sync (issue 14): what it has to push (its outbox: the versions it made,
// each with the version it replaced) and how the server's versions land here — with their own ids,
// authors and times, marked as pulled so they are never pushed back.
//
// A pulled version becomes the path's current version only if it was the server's current one when
// read; an older one joins the path's history only. A path with a change made here that the server
// has not had yet is left alone ('deferred'): the push goes first and the server decides (conflict
// copy, edit wins over delete), and the next pull brings its decision.
import type { EngineContext } from '../context.js';
import { isStrataError, StrataError } from '../errors.js';
import type { OutboxItem, VersionCommit } from '../ports/metadata-repository.js';
import { loadManifest } from '../datasets/read-dataset.js';
import type { ContentHash, VersionRecord } from '../types.js';
import { assertWritablePath, commitOne } from './write-file.js';

export interface PulledVersion {
  record: VersionRecord;
  /** the path's current version on the server when the feed was read */
  current: boolean;
}

export type AdoptOutcome =
  /** recorded as the path's current version, or in its history only */
  | { versionId: string; result: 'adopted' | 'history' }
  /** this id is here already, at this path */
  | { versionId: string; result: 'known' }
  /** this id is here at another path (the server kept it as a conflict copy): a copy was recorded at `path` */
  | { versionId: string; result: 'copied'; path: string; copyVersionId: string }
  /** the path has a change not yet pushed, or changed while adopting: push first, then pull again */
  | { versionId: string; result: 'deferred' }
  /** not writable here (a file where its directory would be, …) */
  | { versionId: string; result: 'skipped'; reason: string };

export async function syncOutbox(ctx: EngineContext, input: { projectId: string; afterSeq: number; limit: number }) {
  await ctx.requireProject(input.projectId);
  return ctx.repository.versions.outboxAfter(input.projectId, input.afterSeq, input.limit);
}

/**
 * The position of the project's newest version record (0: it has none): reading syncOutbox from
 * there shows only what is committed next. A position, unlike a version id, is never pruned away.
 */
export async function feedPosition(ctx: EngineContext, projectId: string): Promise<number> {
  await ctx.requireProject(projectId);
  for (;;) {
    const newest = (await ctx.repository.versions.history(projectId, { limit: 1 })).items[0];
    if (newest === undefined) return 0;
    const head = await ctx.repository.versions.pathHead(projectId, newest.path);
    // A newer record of that path since (or the record pruned): look again. A newer record of
    // another path is simply read after this position.
    if (head !== null && head.versionId === newest.versionId) return head.seq;
  }
}

export async function syncOutboxStats(ctx: EngineContext, input: { projectId: string; afterSeq: number }) {
  await ctx.requireProject(input.projectId);
  return ctx.repository.versions.outboxStats(input.projectId, input.afterSeq);
}

export type { OutboxItem };

/** Of these version ids, those already here (at most 1,000 a call). */
export async function syncKnownVersions(ctx: EngineContext, input: { projectId: string; versionIds: string[] }): Promise<Set<string>> {
  await ctx.requireProject(input.projectId);
  if (input.versionIds.length > 1000) throw new StrataError('INVALID_ARGUMENT', { message: 'at most 1,000 version ids', details: { field: 'versionIds' } });
  return ctx.repository.versions.knownVersionIds(input.projectId, input.versionIds);
}

/** Pulled versions checked before their commits go in together (at most this many at a time). */
const RUN_MAX = 500;

/**
 * Applies pulled versions in feed order; stops at the first deferred one (the rest wait for the next
 * pull). Versions of unrelated paths are checked one by one and then committed together (the commit
 * batcher puts them in one transaction): adopted one at a time, each its own durable transaction, a
 * clone of 5,000 files spent ~3 s per page of 500 here (issue 38). A run ends before a path that is
 * the same as, or above or below, one already in it, so no check depends on a commit of its own run.
 */
export async function adoptSyncedVersions(
  ctx: EngineContext,
  input: { projectId: string; pushedSeq: number; versions: PulledVersion[] },
): Promise<AdoptOutcome[]> {
  const { projectId, versions } = input;
  await ctx.requireProject(projectId);
  const outcomes: AdoptOutcome[] = [];
  for (let i = 0; i < versions.length; ) {
    const end = runEnd(versions, i);
    const prepared: Prepared[] = [];
    let deferred = false;
    for (let k = i; k < end && !deferred; k++) {
      const one = await prepareOne(ctx, projectId, input.pushedSeq, versions[k]!);
      prepared.push(one);
      deferred = 'outcome' in one && one.outcome.result === 'deferred';
    }
    const settled = await Promise.all(prepared.map((one) => ('outcome' in one ? one.outcome : settle(ctx, projectId, one))));
    for (const outcome of settled) {
      outcomes.push(outcome);
      // Those after it in the run may have committed too: the next pull finds them known.
      if (outcome.result === 'deferred') return outcomes;
    }
    i = end;
  }
  return outcomes;
}

/** Where the run that starts at `from` ends: before a path related to one in it, or at RUN_MAX. */
function runEnd(versions: PulledVersion[], from: number): number {
  const paths = new Set<string>();
  const above = new Set<string>();
  let i = from;
  for (; i < versions.length && i - from < RUN_MAX; i++) {
    const path = versions[i]!.record.path;
    const parents = parentsOf(path);
    if (paths.has(path) || above.has(path) || parents.some((parent) => paths.has(parent))) break;
    paths.add(path);
    for (const parent of parents) above.add(parent);
  }
  return Math.max(i, from + 1);
}

function parentsOf(path: string): string[] {
  const parents: string[] = [];
  for (let slash = path.indexOf('/'); slash !== -1; slash = path.indexOf('/', slash + 1)) parents.push(path.slice(0, slash));
  return parents;
}

/** A version decided without a commit of its own, or the commit that decides it. */
type Prepared = { outcome: AdoptOutcome } | { versionId: string; commit: VersionCommit; current: boolean };

async function prepareOne(ctx: EngineContext, projectId: string, pushedSeq: number, pulled: PulledVersion): Promise<Prepared> {
  // A server from before symbolic links (migration 9) sends no `symlink`: its versions are files.
  const record: VersionRecord = { ...pulled.record, projectId, symlink: pulled.record.symlink === true };
  const { versionId } = record;
  const known = await ctx.repository.versions.get(projectId, versionId);
  if (known !== null) {
    if (known.path === record.path || record.contentHash === null) return { outcome: { versionId, result: 'known' } };
    return { outcome: await copyOf(ctx, projectId, record) };
  }
  if (record.contentHash !== null && !(await ctx.store.has(record.contentHash))) {
    throw new StrataError('CONTENT_NOT_AVAILABLE', { details: { hashes: [record.contentHash], count: 1 } });
  }
  const shards = await shardsOf(ctx, record);
  const head = await ctx.repository.versions.pathHead(projectId, record.path);
  if (head !== null && !head.pulled && head.seq > pushedSeq) return { outcome: { versionId, result: 'deferred' } };
  if (!pulled.current) return { versionId, commit: { record, pulled: true, historyOnly: true, ...shards }, current: false };
  const entry = await ctx.repository.versions.getEntry(projectId, record.path);
  if (record.contentHash !== null && entry === null) {
    try {
      await assertWritablePath(ctx, projectId, record.path);
    } catch (error) {
      if (isStrataError(error) && error.status < 500) return { outcome: { versionId, result: 'skipped', reason: error.message } };
      throw error;
    }
  }
  return { versionId, commit: { record, pulled: true, expectedCurrent: entry?.versionId ?? null, ...shards }, current: true };
}

async function settle(ctx: EngineContext, projectId: string, one: Exclude<Prepared, { outcome: AdoptOutcome }>): Promise<AdoptOutcome> {
  const { versionId } = one;
  if (!one.current) {
    await commitOne(ctx, one.commit);
    return { versionId, result: 'history' };
  }
  try {
    await commitOne(ctx, one.commit);
  } catch (error) {
    if (isStrataError(error, 'STALE_BASE_VERSION')) return { versionId, result: 'deferred' };
    if (isStrataError(error) && error.status < 500) return { versionId, result: 'skipped', reason: error.message };
    throw error;
  }
  ctx.retention.schedule(projectId, one.commit.record.path);
  return { versionId, result: 'adopted' };
}

/**
 * A version made here that the server kept at another path (a conflict copy): the copy appears here
 * too, as a version of its own (the id is taken by the original); the caller maps it to the server's.
 */
async function copyOf(ctx: EngineContext, projectId: string, record: VersionRecord): Promise<AdoptOutcome> {
  const copy: VersionRecord = { ...record, versionId: ctx.ids.uuid(), projectId };
  const existing = await ctx.repository.versions.getEntry(projectId, record.path);
  if (existing !== null) return { versionId: record.versionId, result: 'known' };
  try {
    await assertWritablePath(ctx, projectId, record.path);
    await commitOne(ctx, { record: copy, pulled: true, expectedCurrent: null, ...(await shardsOf(ctx, copy)) });
  } catch (error) {
    if (isStrataError(error) && error.status < 500) return { versionId: record.versionId, result: 'skipped', reason: error.message };
    throw error;
  }
  return { versionId: record.versionId, result: 'copied', path: record.path, copyVersionId: copy.versionId };
}

/**
 * A pulled dataset is recorded only once its manifest and every shard it lists are here (the daemon
 * fetched the ones it lacked); the shards then count as referenced, as for a dataset written here.
 */
async function shardsOf(ctx: EngineContext, record: VersionRecord): Promise<{ shards?: ContentHash[] }> {
  if (!record.dataset || record.contentHash === null) return {};
  const manifest = await loadManifest(ctx, record.contentHash);
  const shards = [...new Set(manifest.shards.map((shard) => shard.hash))];
  const absent: ContentHash[] = [];
  for (const hash of shards) if (!(await ctx.store.has(hash))) absent.push(hash);
  if (absent.length > 0) throw new StrataError('CONTENT_NOT_AVAILABLE', { details: { hashes: absent.slice(0, 10), count: absent.length, manifest: record.contentHash } });
  return { shards };
}
