// Watch mode's decision for one path, made after its events settled (or when a scan finds it): stat
// it and compare with what was last versioned (the index: size, mtime, inode, exec bit, link or not),
// then capture a new version, a rename, a deletion — or nothing.
//
// A symbolic link is versioned as a link (issue 15): lstat, readlink, never followed, wherever it
// points (inside, outside, nowhere, at itself). A path is only looked at through real directories: a
// directory on the way that is now a link (or a file) means the path is gone from the project.

import { type BigIntStats, constants } from 'node:fs';
import { lstat, open, readlink, realpath } from 'node:fs/promises';
import { hashBuffer } from '../../engine/hash.js';
import { diskPath } from '../../engine/raw-names.js';
import { openBeneath } from '../beneath.js';
import type { CaptureOutcome, HostContext } from '../host.js';
import type { IndexRow } from '../state.js';

/** A file whose mtime is this recent may still change within the same timestamp tick: re-hash next time. */
const RACY_NS = 50_000_000n;
export const RACY_MTIME = '-1';

export interface ExamineContext {
  host: HostContext;
  /** directory appeared (`st`: its lstat): watch it and examine its files (watch mode); no-op when polling */
  onDirectory(path: string, st: BigIntStats): Promise<void>;
  /** directory vanished: stop watching it */
  onDirectoryGone(path: string): void;
  /** runs `task` after anything else under way on `path` (an event's examine, a materialization) */
  exclusive?<T>(path: string, task: () => Promise<T>): Promise<T>;
  /** the file could not be versioned (a full disk under the store): the host looks at it again later */
  onCaptureFailed?(path: string, code: string): void;
  /**
   * The file's change was kept as a conflict copy (the path changed elsewhere meanwhile): the path on
   * disk is to be the project's version again, brought down by the next incoming round.
   */
  onConflictCopy?(path: string): void;
}

export type ExamineResult = 'same' | 'captured' | 'deleted' | 'ignored' | 'none';

type StatRow = Pick<IndexRow, 'size' | 'mtimeNs' | 'ino' | 'executable' | 'symlink'>;

/** The exec bit as versioned: a link has none of its own (lstat says 0777 for every link). */
function executableOf(st: BigIntStats): boolean {
  return !st.isSymbolicLink() && (st.mode & 0o100n) !== 0n;
}

export function statRow(st: BigIntStats): StatRow {
  const nowNs = BigInt(Date.now()) * 1_000_000n;
  return {
    size: Number(st.size),
    mtimeNs: nowNs - st.mtimeNs < RACY_NS ? RACY_MTIME : st.mtimeNs.toString(),
    ino: st.ino.toString(),
    executable: executableOf(st),
    symlink: st.isSymbolicLink(),
  };
}

/**
 * Unchanged since it was versioned, as far as size, mtime, inode and mode can tell. A link's size is
 * its target's length; a new target is a new link (symlink(2) cannot rewrite one in place), so a new
 * inode or mtime.
 */
export function sameAsIndexed(row: IndexRow, st: BigIntStats): boolean {
  return (
    row.mtimeNs !== RACY_MTIME &&
    row.size === Number(st.size) &&
    row.mtimeNs === st.mtimeNs.toString() &&
    row.ino === st.ino.toString() &&
    row.symlink === st.isSymbolicLink() &&
    row.executable === executableOf(st)
  );
}

/** Racily clean rows are settled by hashing the file up to this size (larger: captured again, as before). */
const RACY_HASH_MAX_BYTES = 16 * 1024 * 1024;

/**
 * sameAsIndexed, and for a racily clean row (its mtime too recent to trust when recorded) the bytes
 * themselves: same size, inode and mode, and the content hashes to what was versioned — the racy-git
 * rule. Without it a file versioned within 50 ms of its write was versioned again at its next look
 * even when nothing had changed; after a restore that deleted it meanwhile, that second look
 * recorded the stale bytes as a new write and the file was never removed (issue 38 item 9, found by
 * the model: `mkdir d; echo x > d/f; strata snapshot restore N` left d/f on disk).
 */
export async function unchangedSinceIndexed(root: string, path: string, row: IndexRow, st: BigIntStats): Promise<boolean> {
  if (sameAsIndexed(row, st)) return true;
  if (
    row.mtimeNs !== RACY_MTIME ||
    row.size !== Number(st.size) ||
    row.ino !== st.ino.toString() ||
    row.symlink !== st.isSymbolicLink() ||
    row.executable !== executableOf(st) ||
    row.size > RACY_HASH_MAX_BYTES
  ) {
    return false;
  }
  const slash = path.lastIndexOf('/');
  const parent = await openBeneath(root, slash === -1 ? '' : path.slice(0, slash), { create: false });
  if (parent.kind !== 'dir') return false;
  try {
    const at = parent.dir.entry(path.slice(slash + 1));
    const bytes = st.isSymbolicLink() ? await readlink(at, { encoding: 'buffer' }) : await readNoFollow(at);
    if (bytes === null || bytes.length !== row.size) return false;
    return hashBuffer(bytes) === row.contentHash;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP' || code === 'EINVAL') return false;
    throw error;
  } finally {
    await parent.dir.close();
  }
}

async function readNoFollow(path: string | Buffer): Promise<Buffer | null> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** What watch mode versions: regular files and symbolic links (not FIFOs, sockets, devices). */
export function isVersionable(st: BigIntStats | null): st is BigIntStats {
  return st !== null && (st.isFile() || st.isSymbolicLink());
}

/** lstat, or null when nothing is there (a missing path or a parent that is not a directory). */
export async function lstatOrNull(path: string | Buffer): Promise<BigIntStats | null> {
  try {
    return await lstat(path, { bigint: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
}

/**
 * lstat of `root/path` reached through real directories only: null when it is gone, or when a
 * directory on the way is a link or a file by now (`root` is a real path, so the parent's real path
 * must be exactly its joined path). One realpath call rather than an lstat per component.
 */
export async function lstatBeneath(root: string, path: string): Promise<BigIntStats | null> {
  const st = await lstatOrNull(diskPath(root, path));
  const slash = path.lastIndexOf('/');
  if (st === null || slash === -1) return st;
  // Compared as bytes: a directory whose name is not UTF-8 has no string realpath that equals it.
  const parent = diskPath(root, path.slice(0, slash));
  try {
    return Buffer.from(await realpath(parent, { encoding: 'buffer' })).equals(Buffer.from(parent)) ? st : null;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return null;
    throw error;
  }
}

export async function examine(ctx: ExamineContext, path: string): Promise<ExamineResult> {
  const { host } = ctx;
  const st = await lstatBeneath(host.dir, path);
  if (st?.isDirectory()) {
    if (host.capture.isIgnored(path, true)) return 'ignored';
    // A file replaced by a directory of the same name.
    if (host.state.index.get(host.projectId, path)) await deletePath(ctx, path);
    await ctx.onDirectory(path, st);
    return 'none';
  }
  if (!isVersionable(st)) {
    // Gone, or no longer a file or link (fifos and sockets are not versioned).
    return (await vanished(ctx, path)) ? 'deleted' : 'none';
  }
  if (host.capture.isIgnored(path)) return 'ignored';
  const row = host.state.index.get(host.projectId, path);
  // A directory replaced by a file or link of the same name (`rm -r data; ln -s /scratch/data data`):
  // what was below it is gone first, or the engine would see a file where its directory is.
  if (row === undefined && host.state.index.hasBelow(host.projectId, path)) {
    ctx.onDirectoryGone(path);
    await Promise.all(host.state.index.under(host.projectId, path).map((below) => deletePath(ctx, below.path)));
  } else if (row === undefined && st.isSymbolicLink()) {
    // A directory moved away and a link made in its place (`mv data /scratch; ln -s /scratch/data`):
    // its watch would report the moved directory's events under this path. (Links are few: the
    // watcher's walk over its watches costs nothing that matters here.)
    ctx.onDirectoryGone(path);
  }
  if (row === undefined && st.isSymbolicLink()) await engineOnlyBelowGone(ctx, path);
  if (row && (await unchangedSinceIndexed(host.dir, path, row, st))) {
    // Racily clean until now: the row takes the stat it can be trusted with from here on.
    if (row.mtimeNs === RACY_MTIME) host.state.index.put(host.projectId, { ...row, ...statRow(st) });
    return 'same';
  }
  const fresh = statRow(st);
  if (!row && (await renamedFrom(ctx, path, st, fresh))) return 'captured';
  const changedAt = Number(st.ctimeNs / 1_000n);
  const outcome = await captureDisk(host, path, st, changedAt);
  if (outcome === null) return 'none';
  if (outcome.kind === 'versioned' || outcome.kind === 'unchanged') {
    const entry = outcome.entry!;
    host.state.index.put(host.projectId, { path, ...fresh, contentHash: entry.contentHash, versionId: entry.versionId });
    // The edit is at the copy now; the path keeps the version made elsewhere, which nothing else would
    // bring to disk here (the feed has it already, or has only this process's own copy): the disk kept
    // the edit at both names — a `chmod +x` on a file renamed and changed elsewhere stayed executable
    // here only, with sync saying in sync (the sync model's seed 48000 path 96).
    if (outcome.kind === 'versioned' && outcome.conflictCopy !== undefined) ctx.onConflictCopy?.(path);
    return outcome.kind === 'versioned' ? 'captured' : 'same';
  }
  if (outcome.kind === 'failed') ctx.onCaptureFailed?.(path, outcome.code);
  return 'none';
}

/**
 * `mv a b` arrives as two unrelated events. A new path whose inode, size and mtime are those of an
 * indexed path that no longer exists is that file, renamed: record a rename (history stays findable,
 * no bytes read) instead of a delete and an unrelated new file.
 */
async function renamedFrom(ctx: ExamineContext, path: string, st: BigIntStats, fresh: StatRow): Promise<boolean> {
  const { host } = ctx;
  for (const candidate of host.state.index.byIno(host.projectId, fresh.ino)) {
    if (candidate.path === path || candidate.size !== Number(st.size) || candidate.mtimeNs !== st.mtimeNs.toString() || candidate.symlink !== fresh.symlink) continue;
    if ((await lstatOrNull(diskPath(host.dir, candidate.path))) !== null) continue;
    const outcome = await host.capture.captureRename(candidate.path, path);
    if (outcome.kind !== 'versioned') return false;
    host.state.index.remove(host.projectId, candidate.path);
    const entry = outcome.entry!;
    host.state.index.put(host.projectId, { path, ...fresh, contentHash: entry.contentHash, versionId: entry.versionId });
    // The exec bit may have changed along with the name.
    if (entry.executable !== fresh.executable) await captureDisk(host, path, st);
    return true;
  }
  return false;
}

/**
 * Versions what is on disk at `path` (lstat `st`): a file's content, or a link's target (readlink,
 * never followed). null when it changed kind meanwhile (a link no more): its own event follows.
 */
export async function captureDisk(host: HostContext, path: string, st: BigIntStats, changedAt?: number): Promise<CaptureOutcome | null> {
  if (!st.isSymbolicLink()) return host.capture.captureFile({ path, file: diskPath(host.dir, path), executable: executableOf(st), ...(changedAt === undefined ? {} : { changedAt }) });
  // The link is read in its directory, opened without following links (a directory on the way that
  // became a link meanwhile is not read through either).
  const slash = path.lastIndexOf('/');
  const parent = await openBeneath(host.dir, slash === -1 ? '' : path.slice(0, slash), { create: false });
  if (parent.kind !== 'dir') return null;
  let target: Buffer;
  try {
    target = await readlink(parent.dir.entry(path.slice(slash + 1)), { encoding: 'buffer' });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EINVAL') return null;
    throw error;
  } finally {
    await parent.dir.close();
  }
  return host.capture.captureLink({ path, target, ...(changedAt === undefined ? {} : { changedAt }) });
}

/**
 * A link now stands where the project has files below it that this directory never had (an API write
 * to sub/race1.txt answered just before sub became a link; issue 38 item 8): they can never reach the
 * disk, and the link cannot be versioned while they are there (the engine would have a file below a
 * link). Their deletion is recorded — their content stays in history — and said in the log.
 */
async function engineOnlyBelowGone(ctx: ExamineContext, path: string): Promise<void> {
  const { host } = ctx;
  const below = await host.engine.listFiles({ projectId: host.projectId, prefix: path, limit: 1000 });
  for (const entry of below.items) {
    if (host.state.index.get(host.projectId, entry.path) !== undefined) continue;
    host.logger.warn({ path: entry.path, link: path }, 'a file of the project is below what is now a link on disk: it cannot be brought to disk, and its deletion is recorded (its versions stay in history)');
    await deletePath(ctx, entry.path);
  }
}

/** The path no longer holds a file: tombstones for it (or, if it was a directory, everything below). */
async function vanished(ctx: ExamineContext, path: string): Promise<boolean> {
  const { host } = ctx;
  const below = host.state.index.under(host.projectId, path);
  if (below.length > 0) {
    ctx.onDirectoryGone(path);
    const results = await Promise.all(below.map((row) => deletePath(ctx, row.path)));
    return results.some(Boolean);
  }
  ctx.onDirectoryGone(path);
  if (host.capture.isIgnored(path)) return false;
  // Only a path this directory had (its index row) counts as a deletion: a temp file that came and
  // went is nothing, and must not count towards the mass-delete guard. The engine's entry is no
  // evidence: it may be a file from elsewhere not brought to disk yet. A directory `c` replaced by a
  // file `c` on another workstation arrives as the deletion of `c/a` (this daemon removes `c/a` and
  // the emptied directory) and then the file `c`; when the event for the removed directory settled
  // before the file was placed, the engine already had it and its deletion was recorded here: the
  // other workstation's file was undone everywhere (issue 38, defect 4's watch half, ~1 run in 3).
  if (host.state.index.get(host.projectId, path) === undefined) return false;
  return deletePath(ctx, path);
}

async function deletePath(ctx: ExamineContext, path: string): Promise<boolean> {
  const { host } = ctx;
  const outcome = await host.capture.captureDelete(path);
  // Guarded: keep the index row, so the file still counts as tracked and a later reset deletes it.
  if (outcome.kind === 'versioned' || outcome.kind === 'absent') host.state.index.remove(host.projectId, path);
  return outcome.kind === 'versioned';
}
