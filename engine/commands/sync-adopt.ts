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
import type { OutboxItem } from '../ports/metadata-repository.js';
import { loadManifest } from '../datasets/read-dataset.js';
import type { ContentHash, VersionRecord } from '../types.js';
import { makeWay, makeWayAbove } from './sync-make-way-above.js';
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

/**
 * Applies pulled versions in feed order; stops at the first deferred one (the rest wait for the next
 * pull). Versions of unrelated paths (none the same as, or a directory of, another) are committed
 * together: one at a time, a 2,000-file directory renamed elsewhere (4,000 versions) took ~25 s here,
 * one transaction each; submitted at once, the commit batcher makes a few transactions of them. A
 * wave ends before a version that would be deferred, so nothing after it is applied; only a change
 * made here while the wave commits can defer one whose neighbours then went through (they are
 * independent paths; the page is read again and they are 'known').
 */
export async function adoptSyncedVersions(
  ctx: EngineContext,
  input: {
    projectId: string;
    pushedSeq: number;
    versions: PulledVersion[];
    refused?: readonly string[];
    /** whether the host's directory at a path may give way to a file (makeWayAbove); absent: it may */
    mayReplaceDirectory?: (path: string) => Promise<boolean>;
  },
): Promise<AdoptOutcome[]> {
  const { projectId, pushedSeq, versions } = input;
  const refused = new Set(input.refused ?? []);
  const mayReplace = input.mayReplaceDirectory;
  await ctx.requireProject(projectId);
  const outcomes: AdoptOutcome[] = [];
  for (let start = 0; start < versions.length; ) {
    const wave = takeWave(versions, start);
    start += wave.length;
    let cut = wave.length;
    for (let i = 0; i < wave.length; i++) {
      if (await deferredHere(ctx, projectId, pushedSeq, wave[i]!.record)) {
        cut = i;
        break;
      }
    }
    // Each under the shared GC lock, from "its content is here" to "its record committed" (rw-lock.ts):
    // retention prunes what the page's own adoptions replaced (a version of this workstation's kept by
    // the server as a conflict copy comes back under the same id, its content no longer referenced in
    // between), and its collection once deleted such content between adoptOne's check and the commit
    // (the sync model's seed 43001: fsck "1 missing" on the workstation, its conflict copy's bytes).
    const results = await Promise.all(
      wave
        .slice(0, cut)
        .map((pulled) => ctx.gcLock.shared(() => adoptOne(ctx, { projectId, pushedSeq, pulled, refused, ...(mayReplace === undefined ? {} : { mayReplace }) }))),
    );
    outcomes.push(...results);
    if (cut < wave.length) {
      outcomes.push({ versionId: wave[cut]!.record.versionId, result: 'deferred' });
      break;
    }
    if (results.some((o) => o.result === 'deferred')) break;
  }
  return outcomes;
}

const MAX_WAVE = 500;

/** From `start`, the versions whose paths are independent of each other (at most MAX_WAVE). */
function takeWave(versions: PulledVersion[], start: number): PulledVersion[] {
  const paths = new Set<string>();
  /** every directory above a path of the wave */
  const dirs = new Set<string>();
  const wave: PulledVersion[] = [];
  for (let i = start; i < versions.length && wave.length < MAX_WAVE; i++) {
    const path = versions[i]!.record.path;
    const above = ancestors(path);
    if (paths.has(path) || dirs.has(path) || above.some((dir) => paths.has(dir))) break;
    paths.add(path);
    for (const dir of above) dirs.add(dir);
    wave.push(versions[i]!);
  }
  return wave;
}

function ancestors(path: string): string[] {
  const out: string[] = [];
  for (let slash = path.indexOf('/'); slash !== -1; slash = path.indexOf('/', slash + 1)) out.push(path.slice(0, slash));
  return out;
}

/** adoptOne's 'deferred' rule, asked before anything of the wave commits. */
async function deferredHere(ctx: EngineContext, projectId: string, pushedSeq: number, record: VersionRecord): Promise<boolean> {
  if ((await ctx.repository.versions.get(projectId, record.versionId)) !== null) return false;
  const head = await ctx.repository.versions.pathHead(projectId, record.path);
  return head !== null && !head.pulled && head.seq > pushedSeq;
}

async function adoptOne(
  ctx: EngineContext,
  input: { projectId: string; pushedSeq: number; pulled: PulledVersion; refused: ReadonlySet<string>; mayReplace?: (path: string) => Promise<boolean> },
): Promise<AdoptOutcome> {
  const { projectId, pushedSeq, pulled, refused } = input;
  // A server from before symbolic links (migration 9) sends no `symlink`: its versions are files.
  const record: VersionRecord = { ...pulled.record, projectId, symlink: pulled.record.symlink === true };
  const { versionId } = record;
  const known = await ctx.repository.versions.get(projectId, versionId);
  if (known !== null) {
    // Made here and kept by the server at another path (a conflict copy): a deletion too, since the
    // server carries a deletion of a file it kept as a copy to the copy (issue 38).
    if (known.path === record.path) return { versionId, result: 'known' };
    return copyOf(ctx, projectId, record, pulled.current);
  }
  if (record.contentHash !== null && !(await ctx.store.has(record.contentHash))) {
    throw new StrataError('CONTENT_NOT_AVAILABLE', { details: { hashes: [record.contentHash], count: 1 } });
  }
  const shards = await shardsOf(ctx, record);
  const head = await ctx.repository.versions.pathHead(projectId, record.path);
  if (head !== null && !head.pulled && head.seq > pushedSeq) return { versionId, result: 'deferred' };
  if (!pulled.current) {
    await commitOne(ctx, { record, pulled: true, historyOnly: true, ...shards });
    return { versionId, result: 'history' };
  }
  const entry = await ctx.repository.versions.getEntry(projectId, record.path);
  try {
    if (record.contentHash !== null && entry === null) {
      if ((await makeWayBelow(ctx, projectId, pushedSeq, record, refused)) === 'push first') return { versionId, result: 'deferred' };
      const above = { projectId, pushedSeq, record, refused, ...(input.mayReplace === undefined ? {} : { mayReplace: input.mayReplace }) };
      if ((await makeWayAbove(ctx, above)) === 'push first') return { versionId, result: 'deferred' };
      await assertWritablePath(ctx, projectId, record.path);
    }
    await commitOne(ctx, { record, pulled: true, expectedCurrent: entry?.versionId ?? null, ...shards });
  } catch (error) {
    if (isStrataError(error, 'STALE_BASE_VERSION')) return { versionId, result: 'deferred' };
    if (isStrataError(error) && error.status < 500) return { versionId, result: 'skipped', reason: error.message };
    throw error;
  }
  ctx.retention.schedule(projectId, record.path);
  return { versionId, result: 'adopted' };
}

/**
 * The server's current version of `a/x` arrives where this workstation has a file `a` of its own
 * (the sync model's defect 2: offline, B replaced the directory `a` by a file while A edited `a/a`).
 * Such a file has been pushed, and the server, whose `a` is a directory, could only keep it as a
 * conflict copy (`a (conflict wsB …)`; had it taken the file at `a`, its deletion would come in the
 * feed before `a/x`): its bytes are on the server, and the copy comes down in the feed as a version
 * of its own. So the file makes way — a deletion recorded as pulled (the server has nothing at `a`
 * to delete) — and the server's directory comes down. It used to be skipped for good ("'a' is a file,
 * so 'a/a' cannot be created below it", waiting for the user) while the other workstations had
 * converged. A file not pushed yet is pushed first ('push first': the pull is deferred, and the
 * server decides); one pulled from the server is the server's own and one the server refused is on
 * no server version: those stay, and the version is skipped (it needs the user).
 */
async function makeWayBelow(ctx: EngineContext, projectId: string, pushedSeq: number, record: VersionRecord, refused: ReadonlySet<string>): Promise<'push first' | 'done'> {
  const { versions } = ctx.repository;
  for (;;) {
    const conflict = await versions.writeConflict(projectId, record.path);
    if (conflict?.kind !== 'file-ancestor') return 'done';
    const entry = await versions.getEntry(projectId, conflict.ancestor);
    const head = await versions.pathHead(projectId, conflict.ancestor);
    if (entry === null || head === null || head.versionId !== entry.versionId || head.pulled || refused.has(entry.versionId)) return 'done';
    if (head.seq > pushedSeq) return 'push first';
    // The change that took the path's place (the server's directory) is whose this is.
    if ((await makeWay(ctx, projectId, entry, record.actor)) === 'push first') return 'push first';
  }
}

/**
 * A version made here that the server kept at another path (a conflict copy): the copy appears here
 * too, as a version of its own (the id is taken by the original); the caller maps it to the server's.
 */
async function copyOf(ctx: EngineContext, projectId: string, record: VersionRecord, current: boolean): Promise<AdoptOutcome> {
  const copy: VersionRecord = { ...record, versionId: ctx.ids.uuid(), projectId };
  const existing = await ctx.repository.versions.getEntry(projectId, record.path);
  // A deletion of a copy that is not here: nothing to delete, no tombstone of nothing.
  if (record.contentHash === null && existing === null) return { versionId: record.versionId, result: 'known' };
  if (existing !== null) {
    // A later save of the same file continues the copy on the server (two saves made offline): it
    // continues it here, on top of what came from the server — never over a change made here.
    const head = await ctx.repository.versions.pathHead(projectId, record.path);
    if (!current || head === null || !head.pulled || head.versionId !== existing.versionId) return { versionId: record.versionId, result: 'known' };
  }
  // The original's content, unless retention pruned the original since it was read (the caller holds
  // the GC lock: what is here now stays until the copy is committed).
  if (copy.contentHash !== null && !(await ctx.store.has(copy.contentHash))) {
    throw new StrataError('CONTENT_NOT_AVAILABLE', { details: { hashes: [copy.contentHash], count: 1 } });
  }
  try {
    if (existing === null) await assertWritablePath(ctx, projectId, record.path);
    await commitOne(ctx, { record: copy, pulled: true, expectedCurrent: existing?.versionId ?? null, ...(await shardsOf(ctx, copy)) });
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
