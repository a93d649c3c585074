// Writing into the project directory without ever following a symbolic link on the way (issue 15).
// Once links are versioned they are on disk, and a link where a directory was (`a -> /etc`, made by
// the user, a `tar x`, or another account that can write to a shared project) must not turn the
// write of `a/passwd` into a write of /etc/passwd. Checking each component and then writing by name
// would race with the link being made in between; so the path is never used by name. Each directory is
// opened from the one above it with O_NOFOLLOW | O_DIRECTORY, through the kernel's name for that
// open directory (/proc/self/fd/N/<name>: resolved from the descriptor, the same as openat(2), which
// Node does not offer), and every create, rename and unlink happens through the descriptor of the
// directory it is in. A link anywhere on the way fails the open (ELOOP) instead of being followed.
// Linux only, like the rest of watch mode (inotify) and mount mode (FUSE).
import { constants } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, readdir } from 'node:fs/promises';
import { StrataError } from '../engine/errors.js';
import { diskPath } from '../engine/raw-names.js';

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** An open directory of the project: names in it resolve through the descriptor, never through a link. */
export class BeneathDir {
  constructor(
    private readonly handle: FileHandle,
    /** project-relative ('' = the root) */
    readonly path: string,
  ) {}

  /**
   * `name` in this very directory, whatever the directory's own path points to by now. A Buffer when
   * the recorded name stands for bytes that are not UTF-8 (engine/raw-names.ts): the very bytes.
   */
  entry(name: string): string | Buffer {
    if (name === '' || name === '.' || name === '..' || name.includes('/')) throw new TypeError(`not a single name: ${JSON.stringify(name)}`);
    return diskPath(`/proc/self/fd/${this.handle.fd}`, name);
  }

  /** entry() of a name of Strata's own (`.strata/project.json`), which is always text. */
  ownEntry(name: string): string {
    const entry = this.entry(name);
    if (typeof entry !== 'string') throw new TypeError(`not a name of Strata's own: ${JSON.stringify(name)}`);
    return entry;
  }

  /** The names in this very directory. */
  list(): Promise<string[]> {
    return readdir(`/proc/self/fd/${this.handle.fd}`);
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

export type Beneath =
  | { kind: 'dir'; dir: BeneathDir }
  /** `at` (project-relative) does not exist */
  | { kind: 'missing'; at: string }
  /** `at` is a symbolic link: nothing below it is the project's */
  | { kind: 'link'; at: string }
  /** `at` is a file (or anything else that is not a directory) */
  | { kind: 'file'; at: string };

/**
 * Opens directory `dir` (project-relative, '' = the root) below `root` (a real path), one component
 * at a time, never following a link. `create` makes missing directories on the way (mkdir through the
 * parent's descriptor). The caller closes the directory.
 */
export async function openBeneath(root: string, dir: string, options: { create: boolean }): Promise<Beneath> {
  let current = await open(root, DIR_FLAGS);
  let at = '';
  try {
    for (const name of dir === '' ? [] : dir.split('/')) {
      at = at === '' ? name : `${at}/${name}`;
      const child = diskPath(`/proc/self/fd/${current.fd}`, name);
      let next = await openDir(child);
      if (next === 'ENOENT' && options.create) {
        try {
          await mkdir(child);
        } catch (error) {
          // Made meanwhile (by us for another path, or by the user): opened below like any other.
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        }
        next = await openDir(child);
      }
      if (typeof next === 'string') {
        // ELOOP (O_NOFOLLOW met a link) or ENOTDIR: which one, from the entry itself (lstat does not
        // follow it), asked while the directory's descriptor is still open.
        const st = next === 'ENOENT' ? null : await lstat(child).catch(() => null);
        await current.close();
        if (st === null) return { kind: 'missing', at };
        return st.isSymbolicLink() ? { kind: 'link', at } : { kind: 'file', at };
      }
      await current.close();
      current = next;
    }
  } catch (error) {
    await current.close().catch(() => undefined);
    throw error;
  }
  return { kind: 'dir', dir: new BeneathDir(current, dir) };
}

async function openDir(path: string | Buffer): Promise<FileHandle | 'ENOENT' | 'ELOOP' | 'ENOTDIR'> {
  try {
    return await open(path, DIR_FLAGS);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR') return code;
    throw error;
  }
}

/** The coded refusal for a path whose directory on the way is a link (`link`, project-relative). */
export function throughLink(path: string, link: string): StrataError {
  return new StrataError('PATH_THROUGH_SYMLINK', {
    message: `${JSON.stringify(link)} is a symbolic link: ${JSON.stringify(path)} is not written through it (nothing is written through a link)`,
    details: { path, link },
  });
}

/** The refusal checkWritable throws for a directory in the way of a restored or written file. */
export function directoryInTheWay(path: string, blocking: string): StrataError {
  return new StrataError('PATH_IS_DIRECTORY', {
    message: `'${path}' is a directory, and '${blocking}' in it is not in the project's history: a file at '${path}' would take its place. Move it away and try again; nothing was changed`,
    details: { path, blocking },
  });
}
