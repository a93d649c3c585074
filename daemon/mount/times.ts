// The times of the mount's versioned files (issue 15) and directories. A version records when it was
// captured, not the file's mtime, so the times tools set (tar x, cp -p, rsync -t, touch -d) and the
// mtimes an import found are kept here, per path and version: in memory, and in the daemon's state DB
// (`mount_times`) so a restart shows them too (make and rsync compare them). A time is only valid while
// its version is the path's current one: a new write has a time of its own. Times are exact to the
// nanosecond (file-time.ts); a file whose times are its version's timestamp, which it shows without a
// row, has none. A directory's times (namespace.ts keeps them while the mount runs) are a row without
// a version.
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';
import { type FileTime, msTime, sameTime } from './file-time.js';

export interface FileTimes {
  versionId: string;
  mtime: FileTime;
  /** when not set, the mtime */
  atime?: FileTime | undefined;
  /** when not set, the mtime */
  ctime?: FileTime | undefined;
}

/** A directory's times (namespace.ts): kept as a row with no version (DIR_VERSION), as a directory has none. */
export interface DirTimes {
  atime: FileTime;
  mtime: FileTime;
  ctime: FileTime;
}

const DIR_VERSION = '';

/** Where the rows live; `null` keeps the times in memory only (tests of the mount state without a home). */
export interface TimeRows {
  get(path: string): FileTimes | undefined;
  /** the rows of directories (DIR_VERSION) */
  dirs(): Array<[string, FileTimes]>;
  put(path: string, times: FileTimes): void;
  remove(path: string): void;
  /** writes what is queued (at stop) */
  flush(): void;
}

export class MountTimes {
  /** what this run set (a map of every file it touched, as before rows existed) */
  readonly #recent = new Map<string, FileTimes>();

  constructor(private readonly rows: TimeRows | null) {}

  /** The times kept for `path` while `versionId` is its current version. */
  get(path: string, versionId: string): FileTimes | undefined {
    const times = this.#recent.get(path) ?? this.rows?.get(path);
    return times !== undefined && times.versionId === versionId ? times : undefined;
  }

  /**
   * `versionAtMs`: the version's timestamp, which a file shows without a row: times that are exactly
   * it need none. Any other time is kept, to the nanosecond: within 2 s of it was once taken for the
   * capture's own and not kept, and a `touch` (now) right after a write showed the version's time
   * again after a restart (issue 39 item 3).
   */
  set(path: string, times: FileTimes, versionAtMs?: number): void {
    this.#recent.set(path, times);
    if (this.rows === null) return;
    if (versionAtMs !== undefined && showsVersionTime(times, versionAtMs)) this.rows.remove(path);
    else this.rows.put(path, times);
  }

  delete(path: string): void {
    this.#recent.delete(path);
    this.rows?.remove(path);
  }

  /** The directories' times a previous run kept (read once, at start: the namespace keeps them then). */
  dirs(): Array<[string, DirTimes]> {
    return (this.rows?.dirs() ?? []).map(([dir, { mtime, atime, ctime }]) => [dir, { mtime, atime: atime ?? mtime, ctime: ctime ?? mtime }]);
  }

  setDir(dir: string, times: DirTimes): void {
    this.rows?.put(dir, { versionId: DIR_VERSION, ...times });
  }

  deleteDir(dir: string): void {
    this.rows?.remove(dir);
  }

  flush(): void {
    this.rows?.flush();
  }
}

function showsVersionTime(times: FileTimes, versionAtMs: number): boolean {
  const { mtime, atime, ctime } = times;
  const same = (time: FileTime | undefined) => time === undefined || sameTime(time, mtime);
  return mtime.ms === versionAtMs && mtime.ns === 0 && same(atime) && same(ctime);
}

/**
 * The rows in the daemon's state DB. Writes are queued and written together every FLUSH_MS (and at
 * stop): untarring 20,000 files sets 20,000 times, and a transaction per event-loop turn cost ~30 µs a
 * file on the thread that answers the kernel. A kill -9 loses at most the last FLUSH_MS of times
 * (never content: those files then show their versions' timestamps).
 */
const FLUSH_MS = 250;

type TimeRow = { version_id: string; mtime_ms: number; mtime_ns: number | null; atime_ms: number | null; atime_ns: number | null; ctime_ms: number | null; ctime_ns: number | null };

/**
 * A time is two columns: whole ms (`*_ms`) and the nanoseconds past them (`*_ns`, file-time.ts). Rows
 * written before the `*_ns` columns have none: their `*_ms` (fractional after an import) is all there is.
 */
function timeOf(ms: number, ns: number | null): FileTime {
  return ns === null ? msTime(ms) : { ms, ns };
}

function timesOf(row: TimeRow): FileTimes {
  return {
    versionId: row.version_id,
    mtime: timeOf(row.mtime_ms, row.mtime_ns),
    atime: row.atime_ms === null ? undefined : timeOf(row.atime_ms, row.atime_ns),
    ctime: row.ctime_ms === null ? undefined : timeOf(row.ctime_ms, row.ctime_ns),
  };
}

export function timeRowsIn(db: Database.Database, projectId: string, logger: Logger): TimeRows {
  db.exec(`CREATE TABLE IF NOT EXISTS mount_times (
    project_id TEXT NOT NULL, path TEXT NOT NULL, version_id TEXT NOT NULL,
    mtime_ms REAL NOT NULL, atime_ms REAL, ctime_ms REAL,
    PRIMARY KEY (project_id, path)) WITHOUT ROWID`);
  const columns = db.prepare<[], { name: string }>('PRAGMA table_info(mount_times)').all();
  for (const column of ['mtime_ns', 'atime_ns', 'ctime_ns']) {
    if (!columns.some(({ name }) => name === column)) db.exec(`ALTER TABLE mount_times ADD COLUMN ${column} INTEGER`);
  }
  const select = db.prepare<[string, string], TimeRow>(
    'SELECT version_id, mtime_ms, mtime_ns, atime_ms, atime_ns, ctime_ms, ctime_ns FROM mount_times WHERE project_id = ? AND path = ?',
  );
  const put = db.prepare(
    'INSERT OR REPLACE INTO mount_times (project_id, path, version_id, mtime_ms, mtime_ns, atime_ms, atime_ns, ctime_ms, ctime_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const selectDirs = db.prepare<[string, string], TimeRow & { path: string }>(
    'SELECT path, version_id, mtime_ms, mtime_ns, atime_ms, atime_ns, ctime_ms, ctime_ns FROM mount_times WHERE project_id = ? AND version_id = ?',
  );
  const remove = db.prepare('DELETE FROM mount_times WHERE project_id = ? AND path = ?');
  const pending = new Map<string, FileTimes | null>();
  let timer: NodeJS.Timeout | null = null;
  const write = db.transaction(() => {
    for (const [path, times] of pending) {
      if (times === null) remove.run(projectId, path);
      else {
        const { versionId, mtime, atime, ctime } = times;
        put.run(projectId, path, versionId, mtime.ms, mtime.ns, atime?.ms ?? null, atime?.ns ?? null, ctime?.ms ?? null, ctime?.ns ?? null);
      }
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
      return row === undefined ? undefined : timesOf(row);
    },
    dirs: () => selectDirs.all(projectId, DIR_VERSION).map((row) => [row.path, timesOf(row)]),
    put: (path, times) => queue(path, { ...times }),
    remove: (path) => queue(path, null),
    flush,
  };
}
