// A small file brought to disk (materialize.ts): its content read whole from the local store (verified
// against its hash there), written to its temp name in `.strata/incoming/` with one descriptor —
// written, mode and mtime set, fsynced, its stat taken, closed — and renamed over its path. The stream
// path (engine.readFile piped into a write stream, then chmod, utimes and an lstat by name) cost a
// clone of 5,000 small files several times the work of the write itself (issue 38).
//
// The same guarantee as the stream path: the rename happens only after the fsync, so a crash leaves
// either the old file (or nothing) at the path, or all of the new one — never a torn file that the
// next scan would take for an edit and version.
import type { BigIntStats } from 'node:fs';
import { close, constants, fchmod, fstat, fsync, futimes, open, write } from 'node:fs';
import { rename, unlink } from 'node:fs/promises';
import { promisify } from 'node:util';
import type { ContentStore } from '../../engine/ports/content-store.js';
import type { Entry } from '../../engine/types.js';
import type { BeneathDir } from '../beneath.js';
import { writtenMtime } from './materialize.js';

/** Files up to this size are read whole into memory and written with one call. */
export const SMALL_FILE_BYTES = 1024 * 1024;

const openFd = promisify(open);
const writeFd = promisify(write);
const fchmodFd = promisify(fchmod);
const futimesFd = promisify(futimes);
const fsyncFd = promisify(fsync);
const fstatFd = promisify(fstat) as (fd: number, options: { bigint: true }) => Promise<BigIntStats>;
const closeFd = promisify(close);

/** `temp`: a fresh name in `.strata/incoming/` (through its descriptor). Returns the file's stat as written. */
export async function placeSmallFile(store: ContentStore, temp: string | Buffer, at: BeneathDir, name: string, entry: Entry, existing: BigIntStats | null): Promise<BigIntStats> {
  const data = await store.readBuffer(entry.contentHash);
  // O_EXCL | O_NOFOLLOW: the temp name is ours alone, never something that was put in its place.
  const fd = await openFd(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, entry.executable ? 0o777 : 0o666);
  let st: BigIntStats;
  try {
    try {
      for (let done = 0; done < data.length; ) done += (await writeFd(fd, data, done, data.length - done)).bytesWritten;
      if (existing?.isFile()) {
        // Keep the user's permissions; only the exec bit is versioned. (A link's 0777 is no file's mode.)
        const mode = Number(existing.mode & 0o7777n);
        await fchmodFd(fd, entry.executable ? mode | ((mode & 0o444) >> 2) : mode & ~0o111);
      }
      const mtime = writtenMtime(entry);
      await futimesFd(fd, mtime, mtime);
      // Down before the rename: the name never shows a file whose bytes are not.
      await fsyncFd(fd);
      st = await fstatFd(fd, { bigint: true });
    } finally {
      await closeFd(fd);
    }
    await rename(temp, at.entry(name));
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  return st;
}
