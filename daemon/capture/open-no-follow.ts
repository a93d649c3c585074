// Opening a project file for reading without following a symbolic link anywhere on its way (issue 15:
// links are versioned as links, never followed). O_NOFOLLOW covers only the last component; a
// directory on the way that became a link (`mv data elsewhere; ln -s /etc data` while an event for
// `data/passwd` waits) would still be followed, and /etc/passwd versioned as the project's file (and
// synced to the team server). So the open is checked by what it opened: the kernel's name for the
// descriptor (/proc/self/fd/N) must be the very path asked for, which is only so when every
// component was a real directory at the moment of the open. No check-then-use race: the check is on
// the descriptor that is then read, through that same /proc entry (worker threads share the
// descriptor table, so the store's reader threads can open it too). Linux only, like inotify and FUSE.
import { constants } from 'node:fs';
import { type FileHandle, open, readlink } from 'node:fs/promises';

export interface OpenedFile {
  handle: FileHandle;
  /** `/proc/self/fd/N`: opens the file that was checked, whatever its name points to by now */
  path: string;
  size: number;
  mode: number;
  /** when the content was last changed (the restore rule in pipeline.ts compares it) */
  mtimeMs: number;
}

/**
 * `file` (absolute, with no link in it: the project directory is a real path) opened for reading, or
 * null when it is not a regular file reached without links: gone, a link itself, below a link or a
 * file, a FIFO, a device. The caller closes the handle.
 */
export async function openNoFollow(file: string | Buffer): Promise<OpenedFile | null> {
  let handle: FileHandle;
  try {
    // O_NONBLOCK: opening a FIFO that took the file's place must not wait for a writer.
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP' || code === 'ENXIO') return null;
    throw error;
  }
  try {
    const st = await handle.stat();
    const path = `/proc/self/fd/${handle.fd}`;
    // As bytes: a name that is not UTF-8 (engine/raw-names.ts) reads back as the same bytes, never as the same string.
    if (st.isFile() && Buffer.from(await readlink(path, { encoding: 'buffer' })).equals(Buffer.from(file))) {
      return { handle, path, size: st.size, mode: st.mode, mtimeMs: st.mtimeMs };
    }
  } catch (error) {
    await handle.close();
    throw error;
  }
  await handle.close();
  return null;
}
