// Watches a directory tree with one inotify watch per directory (Node's fs.watch, non-recursive) and
// reports "something happened at this path" — the host then stats the path and decides.
//
// Why not chokidar or @parcel/watcher (measured on a 200,000-file tree, bench/watcher-choice.ts,
// numbers in docs/design.md §9): chokidar stats and keeps every file, 781 MiB RSS and 5.5 s to get ready;
// @parcel/watcher is light (101 MiB, 1.5 s) but its native debounce holds events up to 500 ms under a
// steady stream of writes (p50 221 ms, p99 495 ms from close to event) — most of our 250 ms p50
// budget before the settle delay even starts. One fs.watch per directory keeps no per-file state
// (RSS stays with the number of directories) and delivers events as inotify reads them.

import { type FSWatcher, lstatSync, watch } from 'node:fs';
import { diskPath, encodeName } from '../../engine/raw-names.js';
import { listNames } from './list-names.js';

export interface TreeWatcherOptions {
  /** absolute root */
  root: string;
  /** a project-relative directory path that must not be watched (ignored dirs: .git/, .strata/) */
  ignoreDir(path: string): boolean;
  /** a project-relative path ('' never) where an entry was created, changed, removed or renamed */
  onPath(path: string): void;
  /** inotify limit reached (ENOSPC), or another watch failure */
  onError(error: NodeJS.ErrnoException, path: string): void;
  /** fs.watch, unless a test needs to see what happens when the kernel refuses a watch */
  watch?: typeof watch;
  /**
   * A name in `dir` the project cannot record (raw bytes; engine/raw-names.ts encodeName): found by a
   * walk (`directory` known), or named by an event (`directory` undefined: the host looks). Such names
   * are never passed to onPath/onFile (unrepresentable.ts lists them).
   */
  onBadName?(dir: string, name: Buffer, directory?: boolean): void;
}

/**
 * Which directory a watch is on: a name can be given to another directory while its watch lives on.
 * The inode alone does not tell: ext4 gives a directory made right after one was removed the removed
 * one's inode (measured here: `rm -r d; mkdir d` had the same inode 3 times in 3). The birth time
 * (statx) does; a filesystem that has none (0) cannot tell, and its directory is never taken for the
 * one watched (its walk is made again: a rare event, see host.ts onDirectory).
 */
export interface DirIdentity {
  dev: bigint;
  ino: bigint;
  birthtimeNs: bigint;
}

interface DirWatch {
  watcher: FSWatcher;
  /** the directory's identity when it was watched (stat'ed before the watch: see addTree) */
  dir: DirIdentity;
}

export class TreeWatcher {
  readonly #options: TreeWatcherOptions;
  readonly #watchers = new Map<string, DirWatch>();
  #closed = false;

  constructor(options: TreeWatcherOptions) {
    this.#options = options;
  }

  get watchedDirs(): number {
    return this.#watchers.size;
  }

  /**
   * Whether `path` is watched, and on the directory `st` is. A watch dies with its directory, without
   * a word from fs.watch (inotify's IN_IGNORED comes out as one more 'rename' event), and keeps its
   * name here: a directory removed and made again (or another moved to the name) before the event
   * of the removal is looked at was taken for watched, and nothing written in it made an event again
   * (the sync model's seed 45001: `rm -r a; echo v > a/a/b`, and a later `echo x >> a/b` was never
   * versioned).
   */
  watches(path: string, st: DirIdentity): boolean {
    const watched = this.#watchers.get(path)?.dir;
    return watched !== undefined && watched.birthtimeNs !== 0n && watched.birthtimeNs === st.birthtimeNs && watched.ino === st.ino && watched.dev === st.dev;
  }

  /**
   * Watches `path` (project-relative, '' = root) and every directory below it. Calls `onFile` for each
   * file found on the way (so callers can capture files that appeared before the watch existed).
   * `revisit` also lists directories already watched (a full rescan).
   */
  async addTree(path: string, onFile?: (path: string) => void | Promise<void>, options: { revisit?: boolean } = {}): Promise<void> {
    const stack = [path];
    while (stack.length > 0 && !this.#closed) {
      const dir = stack.pop()!;
      const watched = this.#watchers.has(dir);
      if (watched && options.revisit !== true) continue;
      if (dir !== '' && this.#options.ignoreDir(dir)) continue;
      // Watch before listing: a file created between the two is then both listed and reported,
      // never neither. The directory is stat'ed before it is watched: one replaced between the two
      // is recorded as the old one, and its watch is only made again for nothing (never the other
      // way round, a dead watch taken for the live directory's).
      if (!watched && !this.#watchDir(dir, this.#identity(dir))) continue;
      let listed: Awaited<ReturnType<typeof listNames>>;
      try {
        // Names as the project records them (list-names.ts): a name that is not UTF-8 gets its stray
        // bytes as U+EF80-U+EFFF instead of U+FFFD; one that cannot be recorded is reported.
        listed = await listNames(diskPath(this.#options.root, dir));
      } catch (error) {
        this.removeTree(dir);
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT' && (error as NodeJS.ErrnoException).code !== 'ENOTDIR') {
          this.#options.onError(error as NodeJS.ErrnoException, dir);
        }
        continue;
      }
      for await (const { name, raw, entry } of listed) {
        if (name === null) {
          if (entry.isDirectory() || entry.isFile() || entry.isSymbolicLink()) this.#options.onBadName?.(dir, raw!, entry.isDirectory());
          continue;
        }
        const child = dir === '' ? name : `${dir}/${name}`;
        if (entry.isDirectory()) stack.push(child);
        else if (entry.isFile() || entry.isSymbolicLink()) await onFile?.(child);
      }
    }
  }

  /**
   * Watches the directory at `path` and every one below it anew (addTree), then lets go of the
   * watches held under those names until now: the directory there is not the one they were made on
   * (see watches). Watched first, closed after: where it is the same directory after all (no birth
   * time to tell), both share the kernel's watch (libuv keeps one per inode), so no event falls
   * between the two.
   */
  async replaceTree(path: string, onFile?: (path: string) => void | Promise<void>): Promise<void> {
    const previous = this.#takeTree(path);
    try {
      await this.addTree(path, onFile);
    } finally {
      for (const watcher of previous) watcher.close();
    }
  }

  /** Stops watching `path` and everything below it (the directory is gone). */
  removeTree(path: string): void {
    for (const watcher of this.#takeTree(path)) watcher.close();
  }

  /** The watches of `path` and everything below it, no longer this watcher's (the caller closes them). */
  #takeTree(path: string): FSWatcher[] {
    const prefix = `${path}/`;
    const taken: FSWatcher[] = [];
    for (const [dir, { watcher }] of this.#watchers) {
      if (dir === path || path === '' || dir.startsWith(prefix)) {
        taken.push(watcher);
        this.#watchers.delete(dir);
      }
    }
    return taken;
  }

  close(): void {
    this.#closed = true;
    for (const { watcher } of this.#watchers.values()) watcher.close();
    this.#watchers.clear();
  }

  /**
   * The directory's identity, or null when there is none to watch (gone, not a directory). A sync
   * lstat, as fs.watch's own inotify_add_watch is a sync lookup of the same path: awaited, it cost
   * the walk a turn of the event loop per directory (5,050 directories: 1.65x the walk's time on
   * this loaded machine, 2026-11-29).
   */
  #identity(dir: string): DirIdentity | null {
    try {
      const st = lstatSync(diskPath(this.#options.root, dir), { bigint: true });
      return st.isDirectory() ? { dev: st.dev, ino: st.ino, birthtimeNs: st.birthtimeNs } : null;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') this.#options.onError(error as NodeJS.ErrnoException, dir);
      return null;
    }
  }

  #watchDir(dir: string, identity: DirIdentity | null): boolean {
    if (identity === null) return false;
    let watcher: FSWatcher;
    try {
      watcher = (this.#options.watch ?? watch)(diskPath(this.#options.root, dir), { persistent: false, encoding: 'buffer' }, (_event, raw) => {
        if (this.#closed) return;
        // A null name means the kernel did not say which entry (queue overflow): re-look at the dir.
        if (raw === null) return this.#options.onPath(dir);
        const bytes = typeof raw === 'string' ? Buffer.from(raw) : raw;
        const name = encodeName(bytes);
        if (name === null) return this.#options.onBadName?.(dir, bytes);
        this.#options.onPath(dir === '' ? name : `${dir}/${name}`);
      });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') this.#options.onError(error as NodeJS.ErrnoException, dir);
      return false;
    }
    watcher.on('error', (error: NodeJS.ErrnoException) => {
      // The directory went away (or its watch broke): forget it; the parent's event brings the delete.
      watcher.close();
      if (this.#watchers.get(dir)?.watcher === watcher) this.#watchers.delete(dir);
      if (error.code !== 'ENOENT' && error.code !== 'EPERM') this.#options.onError(error, dir);
    });
    this.#watchers.set(dir, { watcher, dir: identity });
    return true;
  }
}
