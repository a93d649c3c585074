// The times of the mount's versioned files (issue 15). A version records when it was captured, not the
// file's mtime, so the times tools set (tar x, cp -p, rsync -t, touch -d) and the mtimes an import found
// are kept here, per path and version: in memory, and in the daemon's state DB (`mount_times`) so a
// restart shows them too (make and rsync compare them). A time is only valid while its version is the
// path's current one: a new write has a time of its own. A file written through the mount and captured
// at once has an mtime within moments of its version's timestamp, which is what it shows without a
// row: only other times are written, so ordinary saves add no rows.
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';

export interface FileTimes {
  versionId: string;
  mtimeMs: number;
  /** when not set, the mtime */
  atimeMs?: number | undefined;
  /** when not set, the mtime */
  ctimeMs?: number | undefined;
}

/** Where the rows live; `null` keeps the times in memory only (tests of the mount state without a home). */
export interface TimeRows {
  get(path: string): FileTimes | undefined;
  put(path: string, times: FileTimes): void;
  remove(path: string): void;
  /** writes what is queued (at stop) */
  flush(): void;
}

/** An mtime this close to the moment it is set is the capture's own: no row (see above). */
const FRESH_MS = 2_000;

export class MountTimes {
  /** what this run set (a map of every file it touched, as before rows existed) */
  readonly #recent = new Map<string, FileTimes>();

  constructor(
    private readonly rows: TimeRows | null,
    private readonly now: () => number,
  ) {}

  /** The times kept for `path` while `versionId` is its current version. */
  get(path: string, versionId: string): FileTimes | undefined {
    const times = this.#recent.get(path) ?? this.rows?.get(path);
    return times !== undefined && times.versionId === versionId ? times : undefined;
  }

  /**
   * `exact`: kept even when it is recent (an import's mtimes are the directory's, to the nanosecond).
   * `versionAtMs`: the version's timestamp, which a file shows without a row; an mtime near it needs
   * none. Compared with now instead, a `touch` (now) of an older file kept no row, and after a restart
   * the file showed its last version's time again (make skips or rebuilds; issue 39 item 3).
   */
  set(path: string, times: FileTimes, exact = false, versionAtMs?: number): void {
    this.#recent.set(path, times);
    if (this.rows === null) return;
    if (!exact && Math.abs(times.mtimeMs - (versionAtMs ?? this.now())) <= FRESH_MS) this.rows.remove(path);
    else this.rows.put(path, times);
  }

  delete(path: string): void {
    this.#recent.delete(path);
    this.rows?.remove(path);
  }

  flush(): void {
    this.rows?.flush();
  }
}

/**
 * The rows in the daemon's state DB. Writes are queued and written together every FLUSH_MS (and at
 * stop): untarring 20,000 files sets 20,000 times, and a transaction per event-loop turn cost ~30 µs a
 * file on the thread that answers the kernel. A kill -9 loses at most the last FLUSH_MS of times
 * (never content: those files then show their versions' timestamps).
 */
const FLUSH_MS = 250;

export function timeRowsIn(db: Database.Database, projectId: string, logger: Logger): TimeRows {
  db.exec(`CREATE TABLE IF NOT EXISTS mount_times (
    project_id TEXT NOT NULL, path TEXT NOT NULL, version_id TEXT NOT NULL,
    mtime_ms REAL NOT NULL, atime_ms REAL, ctime_ms REAL,
    PRIMARY KEY (project_id, path)) WITHOUT ROWID`);
  const select = db.prepare<[string, string], { version_id: string; mtime_ms: number; atime_ms: number | null; ctime_ms: number | null }>(
    'SELECT version_id, mtime_ms, atime_ms, ctime_ms FROM mount_times WHERE project_id = ? AND path = ?',
  );
  const put = db.prepare('INSERT OR REPLACE INTO mount_times (project_id, path, version_id, mtime_ms, atime_ms, ctime_ms) VALUES (?, ?, ?, ?, ?, ?)');
  const remove = db.prepare('DELETE FROM mount_times WHERE project_id = ? AND path = ?');
  const pending = new Map<string, FileTimes | null>();
  let timer: NodeJS.Timeout | null = null;
  const write = db.transaction(() => {
    for (const [path, times] of pending) {
      if (times === null) remove.run(projectId, path);
      else put.run(projectId, path, times.versionId, times.mtimeMs, times.atimeMs ?? null, times.ctimeMs ?? null);
    }
    pending.clear();
  });
  const flush = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    if (pending.size === 0) return;
    try {
      write();
    } catch (error) {
      pending.clear();
      logger.warn({ err: (error as Error).message }, 'mount: recording file times failed');
    }
  };
  const queue = (path: string, times: FileTimes | null) => {
    pending.delete(path); // re-inserted last: a path's changes stay in the order they were made
    pending.set(path, times);
    if (timer === null) {
      timer = setTimeout(flush, FLUSH_MS);
      timer.unref();
    }
  };
  return {
    get(path) {
      if (pending.has(path)) return pending.get(path) ?? undefined;
      const row = select.get(projectId, path);
      if (row === undefined) return undefined;
      return { versionId: row.version_id, mtimeMs: row.mtime_ms, atimeMs: row.atime_ms ?? undefined, ctimeMs: row.ctime_ms ?? undefined };
    },
    put: (path, times) => queue(path, { ...times }),
    remove: (path) => queue(path, null),
    flush,
  };
}
