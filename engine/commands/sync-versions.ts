// Versions a workstation made, applied on the server in the order they were made (issue 14). Each
// carries its own id (a retry or a duplicate delivery finds it and changes nothing), the version it
// was based on, its original timestamp, and content the project already has (sync-objects.ts). When
// the path moved on meanwhile, nothing is lost: an edit against another edit is kept as a version of
// a conflict copy next to the file; an edit against a deletion brings the file back; a deletion
// against an edit gives way to the edit.
import type { EngineContext } from '../context.js';
import { isStrataError, StrataError } from '../errors.js';
import { parseManifest } from '../datasets/manifest.js';
import { parseContentHash } from '../hash.js';
import { isUuid } from '../ids.js';
import { normalizeProjectPath } from '../paths.js';
import { checkStoredSymlinkTarget } from '../symlink-target.js';
import type { Actor, ContentHash, VersionRecord } from '../types.js';
import { assertWritablePath, commitOne } from './write-file.js';

export const MAX_SYNCED_VERSIONS = 500;
const WORKSTATION_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export interface SyncedVersion {
  versionId: string;
  path: string;
  /** the path's version the change was made on (null: the path did not exist) */
  baseVersionId: string | null;
  /** null: a deletion */
  contentHash: string | null;
  executable?: boolean;
  /** a symbolic link: `contentHash` names its target (never with `dataset` or `executable`) */
  symlink?: boolean;
  /** `contentHash` names a dataset manifest (sent like any content, with every shard it lists) */
  dataset?: boolean;
  /** when the workstation made it (RFC 3339) */
  timestamp: string;
}

export type SyncedOutcome =
  | { versionId: string; result: 'applied' | 'duplicate'; path: string }
  /** recorded as the first version of a conflict copy: `path` is the copy's */
  | { versionId: string; result: 'conflict'; path: string; conflictWith: string }
  /** the path moved on, to these very bytes (both sides made the same file): nothing is recorded */
  | { versionId: string; result: 'same'; path: string; currentVersionId: string }
  /** a deletion of a file that was edited meanwhile: the edit stays, nothing is recorded */
  | { versionId: string; result: 'superseded'; path: string; currentVersionId: string | null }
  | { versionId: string; result: 'refused'; path: string; code: string; message: string };

interface Checked {
  versionId: string;
  path: string;
  baseVersionId: string | null;
  contentHash: ContentHash | null;
  executable: boolean;
  symlink: boolean;
  dataset: boolean;
  timestamp: string;
}

export async function applySyncedVersions(
  ctx: EngineContext,
  input: { projectId: string; actor: Actor; workstation: string; versions: SyncedVersion[] },
): Promise<SyncedOutcome[]> {
  await ctx.requireProject(input.projectId);
  if (!WORKSTATION_RE.test(input.workstation)) {
    throw new StrataError('INVALID_ARGUMENT', { message: 'workstation must be 1-64 letters, digits, ".", "_" or "-"', details: { field: 'workstation' } });
  }
  if (input.versions.length > MAX_SYNCED_VERSIONS) {
    throw new StrataError('INVALID_ARGUMENT', { message: `at most ${MAX_SYNCED_VERSIONS} versions per request`, details: { field: 'versions' } });
  }
  // Everything is checked before anything is applied: bad input changes nothing.
  const checked = input.versions.map((version, i) => check(version, `versions[${i}]`));
  // Under the shared GC lock from "the project has this content" to "its records committed" (rw-lock.ts):
  // content the server had already (not sent again) may be referenced only by a version that
  // retention prunes meanwhile, and its collection would delete it under the records being committed.
  return ctx.gcLock.shared(() => applyChecked(ctx, input, checked));
}

async function applyChecked(
  ctx: EngineContext,
  input: { projectId: string; actor: Actor; workstation: string; versions: SyncedVersion[] },
  checked: Checked[],
): Promise<SyncedOutcome[]> {
  const hashes = [...new Set(checked.flatMap((v) => (v.contentHash === null ? [] : [v.contentHash])))];
  const unavailable = hashes.length === 0 ? [] : await ctx.repository.versions.unavailableObjects(input.projectId, hashes);
  if (unavailable.length > 0) {
    throw new StrataError('CONTENT_NOT_AVAILABLE', { details: { hashes: unavailable.slice(0, 10), count: unavailable.length } });
  }
  const datasets = await datasetsOf(ctx, input.projectId, checked);
  await checkLinkTargets(ctx, checked);
  // Checks first, in order; then every version that can simply follow its base is committed in one
  // go (the batcher makes it one durable transaction: a request of 500 is one fsync, not 500); the few
  // whose path moved on are resolved one by one afterwards, in order.
  const outcomes: Array<SyncedOutcome | Prepared> = [];
  const ids = new Set<string>();
  for (const version of checked) outcomes.push(await prepare(ctx, input, version, ids, datasets));
  const attempts = outcomes.map((item) =>
    'record' in item ? ctx.batcher.submit({ record: item.record, expectedCurrent: item.version.baseVersionId, checkPath: true, ...shardsOf(item) }) : null,
  );
  const results = await Promise.all(attempts);
  const final: SyncedOutcome[] = [];
  /** a version of this request that the server has as another of its own ('same'): the id it has */
  const sameAs = new Map<string, string>();
  for (const [i, item] of outcomes.entries()) {
    if (!('record' in item)) final.push(item);
    else if (results[i]?.ok) {
      ctx.retention.schedule(input.projectId, item.version.path);
      final.push({ versionId: item.version.versionId, result: 'applied', path: item.version.path });
    } else {
      const outcome = await resolveMovedOn(ctx, input, item, sameAs.get(item.version.baseVersionId ?? '') ?? item.version.baseVersionId);
      if (outcome.result === 'same') sameAs.set(outcome.versionId, outcome.currentVersionId);
      final.push(outcome);
    }
  }
  return final;
}

/** A version ready for its first attempt: its record at its own path, based on its base. */
interface Prepared {
  version: Checked;
  record: VersionRecord;
  size: number;
  /** a dataset's distinct shards (they count as referenced while the record does) */
  shards: ContentHash[] | null;
}

function shardsOf(prepared: Prepared): { shards?: ContentHash[] } {
  return prepared.shards === null ? {} : { shards: prepared.shards };
}

interface DatasetFacts {
  size: number;
  shards: ContentHash[];
}

/**
 * The manifests the request's dataset versions name: each must be a canonical manifest whose every
 * shard the project has (sent or referenced), or nothing is applied — a record is never committed
 * over bytes the server could not assemble.
 */
async function datasetsOf(ctx: EngineContext, projectId: string, checked: Checked[]): Promise<Map<ContentHash, DatasetFacts>> {
  const facts = new Map<ContentHash, DatasetFacts>();
  for (const [i, version] of checked.entries()) {
    if (!version.dataset || version.contentHash === null || facts.has(version.contentHash)) continue;
    let manifest: ReturnType<typeof parseManifest>;
    try {
      manifest = parseManifest(await ctx.store.readBuffer(version.contentHash), version.contentHash);
    } catch (error) {
      if (!isStrataError(error, 'DATASET_MANIFEST_INVALID')) throw error;
      throw new StrataError('INVALID_ARGUMENT', {
        message: `versions[${i}].contentHash does not name a dataset manifest: ${error.message}`,
        details: { field: `versions[${i}].contentHash` },
      });
    }
    const shards = [...new Set(manifest.shards.map((shard) => shard.hash))];
    for (let at = 0; at < shards.length; at += 1000) {
      const unavailable = await ctx.repository.versions.unavailableObjects(projectId, shards.slice(at, at + 1000));
      if (unavailable.length > 0) {
        throw new StrataError('CONTENT_NOT_AVAILABLE', { details: { hashes: unavailable.slice(0, 10), count: unavailable.length, manifest: version.contentHash } });
      }
    }
    facts.set(version.contentHash, { size: manifest.size, shards });
  }
  return facts;
}

/**
 * A link's content must be a target every workstation can create again (symlink-target.ts): checked
 * before anything is applied, like a dataset's manifest.
 */
async function checkLinkTargets(ctx: EngineContext, checked: Checked[]): Promise<void> {
  for (const [i, version] of checked.entries()) {
    if (!version.symlink || version.contentHash === null) continue;
    await checkStoredSymlinkTarget(ctx.store, version.contentHash, `versions[${i}].contentHash`);
  }
}

async function prepare(
  ctx: EngineContext,
  input: { projectId: string; actor: Actor },
  version: Checked,
  ids: Set<string>,
  datasets: Map<ContentHash, DatasetFacts>,
): Promise<SyncedOutcome | Prepared> {
  const { projectId } = input;
  const { versionId } = version;
  const known = ids.has(versionId) ? { path: version.path } : await ctx.repository.versions.get(projectId, versionId);
  ids.add(versionId);
  if (known) return { versionId, result: 'duplicate', path: known.path };
  if (await ctx.repository.versions.versionIdInUse(versionId)) {
    const taken = new StrataError('VERSION_ID_TAKEN', { details: { versionId } });
    return { versionId, result: 'refused', path: version.path, code: taken.code, message: taken.message };
  }
  // A deletion of a file the workstation never saw here: nothing to delete, no tombstone of nothing.
  if (version.contentHash === null && version.baseVersionId === null) {
    const current = await ctx.repository.versions.getEntry(projectId, version.path);
    return { versionId, result: 'superseded', path: version.path, currentVersionId: current?.versionId ?? null };
  }
  // A path taken on the server (a directory made elsewhere where this file is, or a file where its
  // directory is) is not refused here: its commit fails and resolveMovedOn keeps it as a conflict copy,
  // as for an edit against an edit — a refusal would leave it on this workstation only.
  const dataset = version.contentHash === null ? undefined : datasets.get(version.contentHash);
  if (dataset !== undefined) return { version, size: dataset.size, shards: dataset.shards, record: recordOf(input, version, dataset.size, version.path) };
  const size = version.contentHash === null ? 0 : ((await ctx.store.stat(version.contentHash))?.size ?? 0);
  return { version, size, shards: null, record: recordOf(input, version, size, version.path) };
}

function recordOf(input: { projectId: string; actor: Actor }, version: Checked, size: number, path: string): VersionRecord {
  return {
    versionId: version.versionId,
    projectId: input.projectId,
    path,
    contentHash: version.contentHash,
    size,
    actor: input.actor,
    timestamp: version.timestamp,
    kind: version.contentHash === null ? 'delete' : 'write',
    restoredFrom: null,
    executable: version.executable,
    symlink: version.symlink,
    dataset: version.dataset,
  };
}

function check(version: SyncedVersion, field: string): Checked {
  if (typeof version.versionId !== 'string' || !isUuid(version.versionId)) {
    throw new StrataError('INVALID_ARGUMENT', { message: `${field}.versionId must be a UUID`, details: { field: `${field}.versionId` } });
  }
  const at = typeof version.timestamp === 'string' ? Date.parse(version.timestamp) : Number.NaN;
  if (!Number.isFinite(at)) throw new StrataError('INVALID_ARGUMENT', { message: `${field}.timestamp must be RFC 3339`, details: { field: `${field}.timestamp` } });
  const base = version.baseVersionId;
  if (base !== null && (typeof base !== 'string' || !isUuid(base))) {
    throw new StrataError('INVALID_ARGUMENT', { message: `${field}.baseVersionId must be a UUID or null`, details: { field: `${field}.baseVersionId` } });
  }
  const contentHash = version.contentHash === null ? null : parseContentHash(version.contentHash, `${field}.contentHash`);
  const symlink = contentHash !== null && version.symlink === true;
  if (symlink && version.dataset === true) {
    throw new StrataError('INVALID_ARGUMENT', { message: `${field}: a symbolic link is never a dataset`, details: { field: `${field}.dataset` } });
  }
  return {
    versionId: version.versionId,
    path: normalizeProjectPath(version.path, `${field}.path`),
    baseVersionId: base,
    contentHash,
    executable: contentHash !== null && version.executable === true && !symlink,
    symlink,
    dataset: contentHash !== null && version.dataset === true,
    timestamp: new Date(at).toISOString(),
  };
}

/**
 * The path moved on since the workstation's base: nothing made on either side is lost. `base`: the
 * version's base as the server has it now (another id when an earlier version of the request turned
 * out to be the server's own bytes, 'same').
 */
async function resolveMovedOn(
  ctx: EngineContext,
  input: { projectId: string; actor: Actor; workstation: string },
  prepared: Prepared,
  base: string | null,
): Promise<SyncedOutcome> {
  const { projectId } = input;
  const { version, size } = prepared;
  const { versionId } = version;
  const commit = async (path: string, expectedCurrent: string | null): Promise<boolean> => {
    try {
      if (version.contentHash !== null && expectedCurrent === null) await assertWritablePath(ctx, projectId, path);
      await commitOne(ctx, { record: recordOf(input, version, size, path), expectedCurrent, checkPath: true, ...shardsOf(prepared) });
      ctx.retention.schedule(projectId, path);
      return true;
    } catch (error) {
      if (isStrataError(error, 'STALE_BASE_VERSION')) return false;
      throw error;
    }
  };

  try {
    const current = await ctx.repository.versions.getEntry(projectId, version.path);
    // Its base is current again: an earlier version of this request (the edit this one deletes or
    // saves over) was resolved first — an edit against a deletion brought the file back. This one
    // follows it. Judged against it as "moved on", the deletion gave way to its own base and the next
    // save became a conflict copy of it (the sync model's seed 39001 path 4: the server kept wsA's
    // `a/b`, which wsA had deleted, and wsA, its own id pulled back as 'known', said in sync).
    if (base !== null && current?.versionId === base && (await commit(version.path, base))) return { versionId, result: 'applied', path: version.path };
    if (version.contentHash === null) {
      // A deletion of a file the server kept as a conflict copy (still as this workstation made it):
      // the copy is deleted, as a write on that base continues the copy. Left standing, the copy is a
      // file where this workstation may next make a directory (seed 38006: `a/a` deleted, `a/a/a` made).
      const copyOfBase = await conflictCopyOfBase(ctx, projectId, version);
      if (copyOfBase !== null && (await commit(copyOfBase.path, copyOfBase.versionId))) return { versionId, result: 'applied', path: copyOfBase.path };
      return { versionId, result: 'superseded', path: version.path, currentVersionId: current?.versionId ?? null };
    }
    if (current !== null && current.contentHash === version.contentHash && current.symlink === version.symlink) {
      // The same file made on both sides (two workstations linked to one project, a copy made twice):
      // nothing to keep twice, no conflict to resolve.
      return { versionId, result: 'same', path: version.path, currentVersionId: current.versionId };
    }
    // The path taken by another kind (a directory where this file is, a file where its directory is):
    // the copy is made where nothing is in the way — next to that directory, or below a copy of the
    // directory's name next to that file.
    const taken = current === null ? await ctx.repository.versions.writeConflict(projectId, version.path) : null;
    if (current === null && taken === null) {
      // Deleted elsewhere, edited here: the edit brings the file back.
      if (await commit(version.path, null)) return { versionId, result: 'applied', path: version.path };
    }
    const conflictWith = current?.versionId ?? 'unknown';
    // Two saves made offline (v2 on v1) against a change made elsewhere: v1 became a conflict copy, and
    // v2 is the next version of that copy, not a second copy (one stale copy per extra save was left).
    const copyOfBase = await conflictCopyOfBase(ctx, projectId, version);
    if (copyOfBase !== null && (await commit(copyOfBase.path, copyOfBase.versionId))) {
      return { versionId, result: 'conflict', path: copyOfBase.path, conflictWith };
    }
    for (let n = 1; n <= 20; n++) {
      const copy =
        taken?.kind === 'file-ancestor'
          ? conflictCopyPath(taken.ancestor, input.workstation, version.timestamp, n) + version.path.slice(taken.ancestor.length)
          : conflictCopyPath(version.path, input.workstation, version.timestamp, n);
      try {
        if (await commit(copy, null)) return { versionId, result: 'conflict', path: copy, conflictWith };
      } catch (error) {
        // The copy's name is in the way of another kind: below the ancestor's copy made earlier, a file
        // stands where this version needs a directory (an earlier copy of a path that is now this
        // version's directory). The next name is free of it; refusing would keep the version off the
        // server for good.
        if (!isStrataError(error, 'PATH_EXISTS') && !isStrataError(error, 'PATH_IS_DIRECTORY')) throw error;
      }
    }
    throw new StrataError('PATH_EXISTS', { message: 'no free conflict copy name', details: { path: version.path } });
  } catch (error) {
    if (!isStrataError(error) || error.status >= 500) throw error;
    return { versionId, result: 'refused', path: version.path, code: error.code, message: error.message };
  }
}

/**
 * The version's base when the server kept it as a conflict copy of the version's path and it is still
 * that copy's current version: the version continues the copy.
 */
async function conflictCopyOfBase(ctx: EngineContext, projectId: string, version: Checked): Promise<{ path: string; versionId: string } | null> {
  if (version.baseVersionId === null) return null;
  const base = await ctx.repository.versions.get(projectId, version.baseVersionId);
  if (base === null || base.path === version.path || !isCopyBelowConflictCopy(base.path, version.path)) return null;
  const copyNow = await ctx.repository.versions.getEntry(projectId, base.path);
  return copyNow?.versionId === base.versionId ? { path: base.path, versionId: base.versionId } : null;
}

/**
 * `copy` is `path` kept as a conflict copy: a copy of its own name, or (a file where one of its
 * ancestors is a file on the server) the same path below a copy of that ancestor's name.
 */
function isCopyBelowConflictCopy(copy: string, path: string): boolean {
  if (isConflictCopyOf(copy, path)) return true;
  for (let slash = path.indexOf('/'); slash > 0; slash = path.indexOf('/', slash + 1)) {
    const rest = path.slice(slash);
    if (copy.endsWith(rest) && isConflictCopyOf(copy.slice(0, copy.length - rest.length), path.slice(0, slash))) return true;
  }
  return false;
}

/** `copy` is named as conflictCopyPath names a copy of `path` (any workstation, time and number). */
function isConflictCopyOf(copy: string, path: string): boolean {
  const { dir, stem, ext } = splitName(path);
  const head = `${dir}${stem} (conflict `;
  return copy.startsWith(head) && copy.endsWith(`)${ext}`) && !copy.slice(head.length).includes('/');
}

/** `dir/fit.m` → `dir/fit (conflict ws2 2026-11-24 1632).m`; the n-th free name gets ` n` inside. */
export function conflictCopyPath(path: string, workstation: string, timestamp: string, n = 1): string {
  const { dir, stem, ext } = splitName(path);
  const when = `${timestamp.slice(0, 10)} ${timestamp.slice(11, 13)}${timestamp.slice(14, 16)}`;
  return `${dir}${stem} (conflict ${workstation} ${when}${n > 1 ? ` ${n}` : ''})${ext}`;
}

/** `a/b/fit.m` → `a/b/`, `fit`, `.m` (a leading dot starts no extension: `.bashrc` has none). */
function splitName(path: string): { dir: string; stem: string; ext: string } {
  const slash = path.lastIndexOf('/');
  const name = path.slice(slash + 1);
  const dot = name.lastIndexOf('.');
  return { dir: path.slice(0, slash + 1), stem: dot > 0 ? name.slice(0, dot) : name, ext: dot > 0 ? name.slice(dot) : '' };
}
