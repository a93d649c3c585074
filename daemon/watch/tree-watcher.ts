// Watches a directory tree with one inotify watch per directory (Node's fs.watch, non-recursive) and
// reports "something happened at this path" — the host then stats the path and decides.
//
// Why not chokidar or @parcel/watcher (measured on a 200,000-file tree, bench/watcher-choice.ts,
// numbers in docs/design.md §9): chokidar stats and keeps every file, 781 MiB RSS and 5.5 s to get ready;
// @parcel/watcher is light (101 MiB, 1.5 s) but its native debounce holds events up to 500 ms under a
// steady stream of writes (p50 221 ms, p99 495 ms from close to event) — most of our 250 ms p50
// budget before the settle delay even starts. One fs.watch per directory keeps no per-file state
// (RSS stays with the number of directories) and delivers events as inotify reads them.

import { type FSWatcher, watch } from 'node:fs';
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

export class TreeWatcher {
  readonly #options: TreeWatcherOptions;
  readonly #watchers = new Map<string, FSWatcher>();
  #closed = false;

  constructor(options: TreeWatcherOptions) {
    this.#options = options;
  }

  get watchedDirs(): number {
    return this.#watchers.size;
  }

  isWatched(path: string): boolean {
    return this.#watchers.has(path);
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
      // never neither.
      if (!watched && !this.#watchDir(dir)) continue;
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

  /** Stops watching `path` and everything below it (the directory is gone). */
  removeTree(path: string): void {
    const prefix = `${path}/`;
    for (const [dir, watcher] of this.#watchers) {
      if (dir === path || path === '' || dir.startsWith(prefix)) {
        watcher.close();
        this.#watchers.delete(dir);
      }
    }
  }

  close(): void {
    this.#closed = true;
    for (const watcher of this.#watchers.values()) watcher.close();
    this.#watchers.clear();
  }

  #watchDir(dir: string): boolean {
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
      if (this.#watchers.get(dir) === watcher) this.#watchers.delete(dir);
      if (error.code !== 'ENOENT' && error.code !== 'EPERM') this.#options.onError(error, dir);
    });
    this.#watchers.set(dir, watcher);
    return true;
  }
}
