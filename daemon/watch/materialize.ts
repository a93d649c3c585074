// Watch mode, the other direction: a change the engine recorded without this directory — a file or
// snapshot restore, `strata put/rm/mv` through the API, another process on the same home, later a
// sync from the team server — is written into the directory, so what `strata` says and what is on
// disk agree (issue 13: a restore used to print "restored" and leave the broken files in place).
//
// One rule makes it safe to run at any time, and again: the disk file is replaced or removed only
// when it is content history already has — its index row matches it, i.e. it is what watch mode last
// versioned, or it already is what the engine wants. Anything else is an edit not versioned yet: it
// is captured first (so it is in history), and the engine's state is then put back on top of it with
// a restore of the version it wanted. Nothing on disk is lost to a change made elsewhere.
//
// A file arrives whole: written to `.strata/incoming/` (same filesystem, never captured), fsynced,
// renamed over the path. Its index row is written with the file's stat, so the watcher's events for
// it find it `same` and do not take the write for a new local change.
//
// A symbolic link (issue 15) arrives as a link: made under a temporary name in its own directory
// (ignored by capture), then renamed over the path, so the path is the old file or link or the new
// link, never nothing. A file or link that replaces a link replaces the link itself; nothing is ever
// written through one. Every name is reached through directories opened without following links
// (beneath.ts): a link where a directory of the path should be is refused (PATH_THROUGH_SYMLINK),
// whether it was there before or appears while the write is under way.
import { randomBytes } from 'node:crypto';
import type { BigIntStats } from 'node:fs';
import { chmod, lstat, lutimes, rename, rmdir, symlink, unlink, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import type { Entry } from '../../engine/types.js';
import { INCOMING_TEMP_PREFIX } from '../capture/ignore.js';
import type { HostContext } from '../host.js';
import type { IndexRow } from '../state.js';
import { type Beneath, type BeneathDir, openBeneath, throughLink } from '../beneath.js';
import type { OpenDirs } from './open-dirs.js';
import type { OwnWrites } from './own-writes.js';
import { placeSmallFile, SMALL_FILE_BYTES } from './place-small.js';
import { captureDisk, lstatOrNull, statRow, unchangedSinceIndexed } from './examine.js';
import { removeVersionedFileInTheWay, removeVersionedTreeInTheWay } from './in-the-way.js';

export type MaterializeResult =
  /** the disk already holds what the engine has */
  | 'same'
  /** the engine's content was written to the path */
  | 'written'
  /** the path was removed, as in the engine */
  | 'removed'
  /** the disk held an unversioned edit: it was versioned and stays (the engine now has it) */
  | 'kept-local'
  /** not ours to touch: ignored, or in the way of a directory, or below a link (see the warning) */
  | 'skipped';

/** Where incoming files are written before they are renamed into place. */
export const INCOMING_DIR = join('.strata', 'incoming');

/**
 * A written file's mtime is never later than this much before now, so its index row is not "racily
 * clean" (examine.ts re-hashes a file whose mtime is within 50 ms of being recorded) and its own
 * events do not make the watcher read a restored multi-GB file again. A later write by anyone gets a
 * newer one.
 */
const WRITTEN_MTIME_AGE_MS = 100;

/**
 * The mtime a file brought to disk gets: its version's time (issue 38: a pulled file had the time of
 * the pull, and make, rsync and backup tools compare mtimes), or a moment ago when that time is later
 * (another machine's clock ahead of this one's).
 */
export function writtenMtime(entry: Pick<Entry, 'timestamp'>, nowMs = Date.now()): Date {
  const at = Date.parse(entry.timestamp);
  const latest = nowMs - WRITTEN_MTIME_AGE_MS;
  return new Date(Number.isFinite(at) ? Math.min(at, latest) : latest);
}

/**
 * Brings one path on disk to the engine's current state for it. Callers serialize calls per path.
 * `dirs`: the directories of a round of many paths, each opened once for all of them (open-dirs.ts);
 * without it, each is opened for this path and closed again. `own`: where the watcher learns what
 * was written here (own-writes.ts), so its event for the write is not examined.
 */
export async function materialize(host: HostContext, path: string, warn: (message: string) => void, dirs?: OpenDirs, own?: OwnWrites): Promise<MaterializeResult> {
  if (host.capture.isIgnored(path)) return 'skipped';
  const { dir, name } = split(path);
  const entry = await host.engine.stat({ projectId: host.projectId, path });
  const inParent = async (parent: Beneath): Promise<MaterializeResult | 'made way'> => {
    // A versioned file where the project has a directory now makes way (in-the-way.ts); the directory
    // is opened again below (a file's place is never kept open by `dirs`).
    if (parent.kind === 'file' && entry !== null && (await removeVersionedFileInTheWay(host, parent.at))) return 'made way';
    if (parent.kind === 'link') {
      // Nothing below a link is the project's: there is nothing to remove there, and nothing is written.
      if (entry === null) {
        if (host.state.index.get(host.projectId, path)) host.state.index.remove(host.projectId, path);
        return 'same';
      }
      refuse(warn, path, parent);
      return 'skipped';
    }
    return bringToDisk(host, path, name, parent.kind === 'dir' ? parent.dir : null, entry, warn, dirs, own);
  };
  const result = await inDir(host, dirs, dir, false, inParent);
  if (result !== 'made way') return result;
  const again = await inDir(host, dirs, dir, false, inParent);
  if (again !== 'made way') return again;
  // A file came back in the directory's place as soon as it made way (a tool writing it again): said,
  // so the path counts as not written here and is tried again (a silent skip left it off disk for good).
  warn(`'${dir}' is a file again on disk, so '${path}' could not be written below it; it is tried again`);
  return 'skipped';
}

/** `task` with directory `dir` opened beneath the project (from `dirs` when the round keeps them open). */
async function inDir<T>(host: HostContext, dirs: OpenDirs | undefined, dir: string, create: boolean, task: (beneath: Beneath) => Promise<T>): Promise<T> {
  if (dirs !== undefined) return dirs.use(dir, { create }, task);
  const beneath = await openBeneath(host.dir, dir, { create });
  try {
    return await task(beneath);
  } finally {
    if (beneath.kind === 'dir') await beneath.dir.close();
  }
}

/**
 * The path's directory is `at` (null: it does not exist, or a file is in its place), reached without
 * links; `wanted` is the engine's entry for the path.
 */
async function bringToDisk(host: HostContext, path: string, name: string, at: BeneathDir | null, wanted: Entry | null, warn: (message: string) => void, dirs: OpenDirs | undefined, own: OwnWrites | undefined): Promise<MaterializeResult> {
  let entry = wanted;
  const st = at === null ? null : await lstatOrNull(at.entry(name));
  const row = host.state.index.get(host.projectId, path);
  if (st !== null && !st.isFile() && !st.isSymbolicLink()) {
    if (st.isDirectory() && entry === null) {
      if (row) host.state.index.remove(host.projectId, path);
      return 'same';
    }
    // A directory holding only directories, or only files history has that the project no longer
    // has there, holds no data that is not kept (in-the-way.ts): the file takes its place.
    const removed = st.isDirectory() && (await removeVersionedTreeInTheWay(host, path, at!.entry(name)));
    if (removed) dirs?.removedDirectories();
    if (!removed) {
      warn(`could not bring ${JSON.stringify(path)} from the project to disk: a ${st.isDirectory() ? 'directory' : 'non-regular file'} is in its place`);
      return 'skipped';
    }
    if (row) host.state.index.remove(host.projectId, path);
    await writeEntry(host, path, entry!, null, warn, dirs, own);
    return 'written';
  }
  const versioned = st !== null && row !== undefined && (await unchangedSinceIndexed(host.dir, path, row, st));

  if (st !== null && !versioned) {
    // An edit this directory has not versioned yet (or a file the stat cannot vouch for: a racily
    // clean row, a row lost in a crash): into history first. Content the engine has already is no
    // new version ('unchanged'), and then the disk simply is the engine's state. A link is versioned
    // as a link (readlink, never followed).
    const outcome = await captureDisk(host, path, st);
    if (outcome === null) {
      warn(`left ${JSON.stringify(path)} as it is on disk: it changed while it was being versioned`);
      return 'skipped';
    }
    if (outcome.kind === 'unchanged') {
      putRow(host, path, st, outcome.entry);
      return 'same';
    }
    if (outcome.kind !== 'versioned' || outcome.entry === null) {
      warn(`left ${JSON.stringify(path)} as it is on disk: its unversioned content could not be versioned first (${outcome.kind})`);
      return 'skipped';
    }
    putRow(host, path, st, outcome.entry);
    // Deleted in the engine: the local edit brought the file back, and it stays.
    if (entry === null) return 'kept-local';
    // The engine had not moved on from what the disk last had: the edit is simply the newest version.
    if (outcome.conflictCopy === undefined && row !== undefined && entry.versionId === row.versionId) return 'kept-local';
    // A synced project kept the edit as a conflict copy (it appears as a file of its own); otherwise
    // the engine's state goes on top again, as a restore: both are in history, the engine's is current.
    if (outcome.conflictCopy === undefined) {
      entry = (await host.engine.restoreVersion({ projectId: host.projectId, versionId: entry.versionId, actor: host.actor })).entry;
    }
  } else if (st === null && row !== undefined) {
    // Deleted here, and the deletion not recorded yet (it waits out the delete settle time): record
    // it, or it would land after the file is written back and delete what the engine wants.
    const outcome = await host.capture.captureDelete(path);
    if (outcome.kind === 'guarded') {
      warn(`left ${JSON.stringify(path)} deleted on disk: the mass-delete guard holds its deletion back (strata guard reset)`);
      return 'skipped';
    }
    host.state.index.remove(host.projectId, path);
    if (entry === null) return 'same';
    if (outcome.kind === 'versioned') entry = (await host.engine.restoreVersion({ projectId: host.projectId, versionId: entry.versionId, actor: host.actor })).entry;
  }

  if (entry === null) {
    if (st === null) return 'same';
    host.state.index.remove(host.projectId, path);
    // unlink through the directory's descriptor: a link is removed itself, never what it points to.
    await unlink(at!.entry(name)).catch(ignoreCode('ENOENT'));
    if (await removeEmptyParents(host.dir, path)) dirs?.removedDirectories();
    return 'removed';
  }
  if (versioned && row!.contentHash === entry.contentHash && row!.executable === entry.executable && row!.symlink === entry.symlink) {
    if (row!.versionId !== entry.versionId) host.state.index.put(host.projectId, { ...row!, versionId: entry.versionId });
    return 'same';
  }
  await writeEntry(host, path, entry, st, warn, dirs, own);
  return 'written';
}

function split(path: string): { dir: string; name: string } {
  const slash = path.lastIndexOf('/');
  return { dir: slash === -1 ? '' : path.slice(0, slash), name: path.slice(slash + 1) };
}

function refuse(warn: (message: string) => void, path: string, blocked: Extract<Beneath, { kind: 'link' }>): void {
  const error = throughLink(path, blocked.at);
  warn(`could not bring ${JSON.stringify(path)} from the project to disk: ${error.message} (${error.code})`);
}

function putRow(host: HostContext, path: string, st: BigIntStats, entry: Entry): void {
  host.state.index.put(host.projectId, { path, ...statRow(st), contentHash: entry.contentHash, versionId: entry.versionId } satisfies IndexRow);
}

async function writeEntry(host: HostContext, path: string, entry: Entry, existing: BigIntStats | null, warn: (message: string) => void, dirs: OpenDirs | undefined, own: OwnWrites | undefined): Promise<void> {
  const { dir, name } = split(path);
  await inDir(host, dirs, dir, true, async (target) => {
    if (target.kind !== 'dir') {
      if (target.kind === 'link') refuse(warn, path, target);
      else warn(`could not bring ${JSON.stringify(path)} from the project to disk: a file is where its directory should be`);
      return;
    }
    const written = entry.symlink ? await placeLink(host, target.dir, name, entry) : await inDir(host, dirs, INCOMING_DIR, true, (incoming) => placeFile(host, incoming, target.dir, name, entry, existing, warn));
    if (written === false) return;
    // A small file's stat was taken before its rename (the same inode, size, mode and mtime), so it
    // holds no write but the daemon's: the watcher may take its event for this write by it. (A
    // streamed file's lstat comes after the rename: its event is examined, as before.)
    if (written !== true) own?.note(path, written);
    putRow(host, path, written === true ? await lstat(target.dir.entry(name), { bigint: true }) : written, entry);
  });
}

/**
 * A file: written whole in `.strata/incoming/`, fsynced, renamed over whatever is at the name (a link
 * included: the link is replaced). The written file's stat for a small one, true for a streamed one.
 */
async function placeFile(host: HostContext, incoming: Beneath, at: BeneathDir, name: string, entry: Entry, existing: BigIntStats | null, warn: (message: string) => void): Promise<BigIntStats | boolean> {
  if (incoming.kind !== 'dir') {
    warn(`could not bring ${JSON.stringify(at.path === '' ? name : `${at.path}/${name}`)} from the project to disk: ${INCOMING_DIR} is not a directory (${incoming.kind} at ${JSON.stringify(incoming.at)})`);
    return false;
  }
  const temp = incoming.dir.ownEntry(`${randomBytes(8).toString('hex')}.part`);
  if (host.store !== undefined && !entry.dataset && entry.size <= SMALL_FILE_BYTES) return placeSmallFile(host.store, temp, at, name, entry, existing);
  try {
    // Durable when it resolves — the rename below must never expose a file whose bytes are not down.
    // Copied from the store and checked on a chunking thread (a pulled 500 MiB dataset was read back
    // through verifying streams on the event loop and piped here).
    await host.engine.writeVersionFile({ projectId: host.projectId, versionId: entry.versionId, target: temp, mode: entry.executable ? 0o777 : 0o666 });
    if (existing?.isFile()) {
      // Keep the user's permissions; only the exec bit is versioned. (A link's 0777 is no file's mode.)
      const mode = Number(existing.mode & 0o7777n);
      await chmod(temp, entry.executable ? mode | ((mode & 0o444) >> 2) : mode & ~0o111);
    }
    const mtime = writtenMtime(entry);
    await utimes(temp, mtime, mtime);
    await rename(temp, at.entry(name));
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  return true;
}

/** A link: made under a temporary name next to its path (same directory, so the rename is atomic), then renamed over it. */
async function placeLink(host: HostContext, at: BeneathDir, name: string, entry: Entry): Promise<boolean> {
  const { stream } = await host.engine.readFile({ projectId: host.projectId, versionId: entry.versionId });
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
  const linkTarget = Buffer.concat(chunks);
  const temp = at.entry(`${INCOMING_TEMP_PREFIX}${randomBytes(8).toString('hex')}`);
  try {
    // The target as bytes, exactly as stored (a Buffer: no re-encoding of non-UTF-8 names).
    await symlink(linkTarget, temp);
    const mtime = writtenMtime(entry);
    await lutimes(temp, mtime, mtime);
    await rename(temp, at.entry(name));
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  return true;
}

/** `rm` of the last file of a directory in the engine leaves no directory there either. True when one was removed. */
export async function removeEmptyParents(root: string, path: string): Promise<boolean> {
  let removed = false;
  for (let dir = split(path).dir; dir !== ''; dir = split(dir).dir) {
    const { dir: above, name } = split(dir);
    const parent = await openBeneath(root, above, { create: false });
    if (parent.kind !== 'dir') return removed;
    try {
      // rmdir through the parent's descriptor: a link in the directory's place is not a directory (ENOTDIR), and stays.
      await rmdir(parent.dir.entry(name));
      removed = true;
    } catch {
      return removed; // not empty (or gone, or not a directory): stop here
    } finally {
      await parent.dir.close();
    }
  }
  return removed;
}

function ignoreCode(code: string): (error: NodeJS.ErrnoException) => void {
  return (error) => {
    if (error.code !== code) throw error;
  };
}
