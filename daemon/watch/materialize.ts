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
import { randomBytes } from 'node:crypto';
import type { BigIntStats } from 'node:fs';
import { createWriteStream } from 'node:fs';
import { chmod, lstat, mkdir, rename, rmdir, unlink, utimes } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Entry } from '../../engine/types.js';
import type { HostContext } from '../host.js';
import type { IndexRow } from '../state.js';
import { lstatOrNull, sameAsIndexed, statRow } from './examine.js';

export type MaterializeResult =
  /** the disk already holds what the engine has */
  | 'same'
  /** the engine's content was written to the path */
  | 'written'
  /** the path was removed, as in the engine */
  | 'removed'
  /** the disk held an unversioned edit: it was versioned and stays (the engine now has it) */
  | 'kept-local'
  /** not ours to touch: ignored, or in the way of a directory (see the warning) */
  | 'skipped';

/** Where incoming files are written before they are renamed into place. */
export const INCOMING_DIR = join('.strata', 'incoming');

/**
 * The mtime a written file gets: this much in the past, so its index row is not "racily clean"
 * (examine.ts re-hashes a file whose mtime is within 50 ms of being recorded) and its own events do
 * not make the watcher read a restored multi-GB file again. A later write by anyone gets a newer one.
 */
const WRITTEN_MTIME_AGE_MS = 100;

/** Brings one path on disk to the engine's current state for it. Callers serialize calls per path. */
export async function materialize(host: HostContext, path: string, warn: (message: string) => void): Promise<MaterializeResult> {
  if (host.capture.isIgnored(path)) return 'skipped';
  const file = join(host.dir, path);
  let entry = await host.engine.stat({ projectId: host.projectId, path });
  const st = await lstatOrNull(file);
  const row = host.state.index.get(host.projectId, path);
  if (st !== null && !st.isFile()) {
    if (st.isDirectory() && entry === null) {
      if (row) host.state.index.remove(host.projectId, path);
      return 'same';
    }
    warn(`could not bring ${JSON.stringify(path)} from the project to disk: a ${st.isDirectory() ? 'directory' : 'non-regular file'} is in its place`);
    return 'skipped';
  }
  const versioned = st !== null && row !== undefined && sameAsIndexed(row, st);

  if (st !== null && !versioned) {
    // An edit this directory has not versioned yet (or a file the stat cannot vouch for: a racily
    // clean row, a row lost in a crash): into history first. Content the engine has already is no
    // new version ('unchanged'), and then the disk simply is the engine's state.
    const outcome = await host.capture.captureFile({ path, file, executable: (st.mode & 0o100n) !== 0n });
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
    await unlink(file).catch(ignoreCode('ENOENT'));
    await removeEmptyParents(host.dir, path);
    return 'removed';
  }
  if (versioned && row!.contentHash === entry.contentHash && row!.executable === entry.executable) {
    if (row!.versionId !== entry.versionId) host.state.index.put(host.projectId, { ...row!, versionId: entry.versionId });
    return 'same';
  }
  await writeEntry(host, path, entry, st, warn);
  return 'written';
}

function putRow(host: HostContext, path: string, st: BigIntStats, entry: Entry): void {
  host.state.index.put(host.projectId, { path, ...statRow(st), contentHash: entry.contentHash, versionId: entry.versionId } satisfies IndexRow);
}

async function writeEntry(host: HostContext, path: string, entry: Entry, existing: BigIntStats | null, warn: (message: string) => void): Promise<void> {
  const target = join(host.dir, path);
  try {
    await mkdir(dirname(target), { recursive: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'ENOTDIR') {
      warn(`could not bring ${JSON.stringify(path)} from the project to disk: a file is where its directory should be`);
      return;
    }
    throw error;
  }
  const incoming = join(host.dir, INCOMING_DIR);
  await mkdir(incoming, { recursive: true });
  const temp = join(incoming, `${randomBytes(8).toString('hex')}.part`);
  try {
    const { stream } = await host.engine.readFile({ projectId: host.projectId, versionId: entry.versionId });
    // flush: fsync before close — the rename below must never expose a file whose bytes are not down.
    await pipeline(stream, createWriteStream(temp, { mode: entry.executable ? 0o777 : 0o666, flush: true }));
    if (existing !== null) {
      // Keep the user's permissions; only the exec bit is versioned.
      const mode = Number(existing.mode & 0o7777n);
      await chmod(temp, entry.executable ? mode | ((mode & 0o444) >> 2) : mode & ~0o111);
    }
    const mtime = new Date(Date.now() - WRITTEN_MTIME_AGE_MS);
    await utimes(temp, mtime, mtime);
    await rename(temp, target);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  const st = await lstat(target, { bigint: true });
  putRow(host, path, st, entry);
}

/** `rm` of the last file of a directory in the engine leaves no directory there either. */
async function removeEmptyParents(root: string, path: string): Promise<void> {
  for (let dir = dirname(path); dir !== '.' && dir !== ''; dir = dirname(dir)) {
    try {
      await rmdir(join(root, dir));
    } catch {
      return; // not empty (or gone): stop here
    }
  }
}

function ignoreCode(code: string): (error: NodeJS.ErrnoException) => void {
  return (error) => {
    if (error.code !== code) throw error;
  };
}
