// Directories of an in-place mount's underlying tree (and of its backing directory, which lives in
// that tree), held open and named through the kernel's name for the descriptor: /proc/self/fd/N/<name>
// resolves from the open directory itself — the way openat(2) does, which Node lacks — so
//  - while the mount covers the directory, its own files stay reachable (a lookup from the descriptor
//    never crosses into the mount on top of it), and
//  - nothing is ever reached through a symbolic link: every directory is opened from the one above it
//    with O_NOFOLLOW | O_DIRECTORY, so a link where a directory should be fails the open (ELOOP)
//    instead of taking a move or a chmod outside the project.
// The same primitive as daemon/beneath.ts, plus what an in-place mount needs: the descriptor's own
// name (to list a directory, and as a root that is itself a descriptor, under the mount). Linux only,
// like FUSE.
import { constants, type Dirent } from 'node:fs';
import { type FileHandle, mkdir, open, readdir } from 'node:fs/promises';

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

export class DirHandle {
  private constructor(
    private readonly handle: FileHandle,
    /** relative to the root it was opened from ('' = the root) */
    readonly path: string,
  ) {}

  /**
   * `abs` opened as a directory. It may be a real path or a descriptor's name ending in `/.`
   * (`/proc/self/fd/N/.`: the final component is '.', so O_NOFOLLOW does not refuse the magic link).
   */
  static async open(abs: string): Promise<DirHandle> {
    return new DirHandle(await open(abs, DIR_FLAGS), '');
  }

  /** The kernel's name for this directory: valid while it is open, whatever its path is now. */
  get self(): string {
    return `/proc/self/fd/${this.handle.fd}`;
  }

  /** `name` in this very directory. */
  entry(name: string): string {
    if (name === '' || name === '.' || name === '..' || name.includes('/')) throw new TypeError(`not a single name: ${JSON.stringify(name)}`);
    return `${this.self}/${name}`;
  }

  childPath(name: string): string {
    return this.path === '' ? name : `${this.path}/${name}`;
  }

  list(): Promise<Dirent[]> {
    return readdir(this.self, { withFileTypes: true });
  }

  /** The subdirectory `name`, or null when it is missing, a link or not a directory. */
  async child(name: string, options: { create?: boolean; mode?: number } = {}): Promise<DirHandle | null> {
    const at = this.entry(name);
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        return new DirHandle(await open(at, DIR_FLAGS), this.childPath(name));
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' || options.create !== true || attempt > 0) {
          if (code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR') return null;
          throw error;
        }
      }
      try {
        await mkdir(at, { mode: options.mode ?? 0o755 });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
    return null;
  }

  /** The directory `rel` below this one ('' = this one, returned as a new handle), one component at a time. */
  async descend(rel: string, options: { create?: boolean; mode?: number } = {}): Promise<DirHandle | null> {
    let current: DirHandle = new DirHandle(await open(`${this.self}/.`, DIR_FLAGS), this.path);
    for (const name of rel === '' ? [] : rel.split('/')) {
      const next = await current.child(name, options).finally(() => current.close());
      if (next === null) return null;
      current = next;
    }
    return current;
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

/** ENOENT/ENOTDIR as "not there"; anything else is thrown. */
export function isGone(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
