// The daemon's own state: `<home>/daemon/state.sqlite`, never the engine's metadata DB. Nearly everything
// in it is a hint that can be rebuilt: the engine's metadata is the truth (the mount's modes and owners,
// mount_attrs in daemon/mount/attrs.ts, are the exception: not versioned, kept only here). So the index may lag behind
// the engine (rows are written only AFTER the engine committed the version), never run ahead of it,
// and synchronous=NORMAL is enough: a lost row only costs one re-hash in the next catch-up scan.

import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { StrataError } from '../engine/errors.js';
import { reserveWalIndex } from '../engine/storage/wal-index-space.js';

/** What watch mode last versioned for a path, as the file looked when it was read. */
export interface IndexRow {
  path: string;
  size: number;
  /** stat mtime in ns as a decimal string; '-1' = racily clean, re-hash next time */
  mtimeNs: string;
  ino: string;
  executable: boolean;
  /** a symbolic link (its size is the target's length; never executable) */
  symlink: boolean;
  contentHash: string;
  versionId: string;
}

export interface DaemonState {
  /** Raw access for tables a host owns: prefix them with the mode (`mount_…`), CREATE IF NOT EXISTS. */
  readonly db: Database.Database;
  index: {
    get(projectId: string, path: string): IndexRow | undefined;
    put(projectId: string, row: IndexRow): void;
    putMany(projectId: string, rows: IndexRow[]): void;
    remove(projectId: string, path: string): void;
    /** all rows of a project, path order */
    all(projectId: string): IndexRow[];
    /** rows strictly below directory `dir` */
    under(projectId: string, dir: string): IndexRow[];
    /** whether any row may be below `dir` (cheap: no flush; a row staged for removal may still count) */
    hasBelow(projectId: string, dir: string): boolean;
    /** rows with this inode (rename detection) */
    byIno(projectId: string, ino: string): IndexRow[];
    /** up to `limit` paths after `after` ('' = from the start), in path order */
    pathsAfter(projectId: string, after: string, limit: number): string[];
    /** the same, each with the version id last versioned from it */
    versionsAfter(projectId: string, after: string, limit: number): Array<{ path: string; versionId: string }>;
    count(projectId: string): number;
    clear(projectId: string): void;
  };
  /** Empty directories the mount shows (the engine only knows files). */
  emptyDirs: {
    add(projectId: string, path: string): void;
    remove(projectId: string, path: string): void;
    list(projectId: string): string[];
  };
  /**
   * Deletions the tripped mass-delete guard holds back, one row per path: a path seen missing again
   * (every scan, every reconciliation) counts once, and a file that comes back leaves the count.
   */
  heldDeletes: {
    /** adds the paths; returns how many are held now */
    add(projectId: string, paths: string[]): number;
    /** a held path exists again; returns how many are held now */
    remove(projectId: string, path: string): number;
    clear(projectId: string): void;
  };
  /** Small per-project JSON values (mass-delete guard state, scan markers). */
  flags: {
    get<T>(projectId: string, key: string): T | undefined;
    set(projectId: string, key: string, value: unknown): void;
    delete(projectId: string, key: string): void;
  };
  close(): void;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS watch_index (
  project_id TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns TEXT NOT NULL,
  ino TEXT NOT NULL, executable INTEGER NOT NULL, content_hash TEXT NOT NULL, version_id TEXT NOT NULL,
  symlink INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, path)) WITHOUT ROWID;
DROP INDEX IF EXISTS watch_index_by_ino;
CREATE INDEX IF NOT EXISTS watch_index_ino ON watch_index (ino, project_id);
CREATE TABLE IF NOT EXISTS mount_empty_dirs (
  project_id TEXT NOT NULL, path TEXT NOT NULL, PRIMARY KEY (project_id, path)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS guard_held (
  project_id TEXT NOT NULL, path TEXT NOT NULL, PRIMARY KEY (project_id, path)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS project_flags (
  project_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (project_id, key)) WITHOUT ROWID;
`;

/**
 * Columns added after a table was first created (CREATE TABLE IF NOT EXISTS leaves an old table as it
 * is): watch_index.symlink came with symbolic links (issue 15); rows from before were regular files.
 */
function addMissingColumns(db: Database.Database): void {
  const columns = db.prepare<[], { name: string }>('SELECT name FROM pragma_table_info(\'watch_index\')').all();
  if (!columns.some((column) => column.name === 'symlink')) db.exec('ALTER TABLE watch_index ADD COLUMN symlink INTEGER NOT NULL DEFAULT 0');
}

interface RawIndexRow {
  path: string;
  size: number;
  mtime_ns: string;
  ino: string;
  executable: number;
  symlink: number;
  content_hash: string;
  version_id: string;
}

function fromRaw(row: RawIndexRow): IndexRow {
  return {
    path: row.path,
    size: row.size,
    mtimeNs: row.mtime_ns,
    ino: row.ino,
    executable: row.executable === 1,
    symlink: row.symlink === 1,
    contentHash: row.content_hash,
    versionId: row.version_id,
  };
}

/**
 * Staged index rows are written this long after the first of them, or as soon as this many wait.
 * One transaction per event-loop turn was still ~2 rows a transaction when a round of 16 paths at a
 * time brought a clone to disk: 2,500 WAL commits for 5,000 files, ~300 ms of the daemon's event
 * loop (bench/sync-clone.ts, --big-mib 0). The cap bounds what byIno/hasBelow scan and what a crash
 * loses (hints either way, see the top).
 */
export const INDEX_FLUSH_MS = 25;
export const INDEX_FLUSH_ROWS = 256;

/** `flushMs`: tests hold staged rows longer than INDEX_FLUSH_MS. */
export function openDaemonState(file: string, options: { flushMs?: number } = {}): DaemonState {
  const flushMs = options.flushMs ?? INDEX_FLUSH_MS;
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  let db: Database.Database;
  try {
    db = new Database(file);
    db.pragma('busy_timeout = 5000');
    db.pragma('journal_mode = WAL');
    // Before the first commit: it writes into the wal-index (engine/storage/wal-index-space.ts).
    reserveWalIndex(db, file);
    db.pragma('synchronous = NORMAL');
    db.exec(SCHEMA);
    addMissingColumns(db);
  } catch (error) {
    throw new StrataError('DAEMON_STATE_ERROR', { message: `cannot open the daemon state ${file}: ${(error as Error).message}`, cause: error });
  }
  const getRow = db.prepare<[string, string], RawIndexRow>('SELECT * FROM watch_index WHERE project_id = ? AND path = ?');
  const putRow = db.prepare(
    'INSERT OR REPLACE INTO watch_index (project_id, path, size, mtime_ns, ino, executable, symlink, content_hash, version_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const removeRow = db.prepare('DELETE FROM watch_index WHERE project_id = ? AND path = ?');
  const allRows = db.prepare<[string], RawIndexRow>('SELECT * FROM watch_index WHERE project_id = ? ORDER BY path');
  const countRows = db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM watch_index WHERE project_id = ?');
  // 'dir/' <= path < 'dir0' ('0' follows '/'): an index range, no LIKE.
  const underRows = db.prepare<[string, string, string], RawIndexRow>(
    'SELECT * FROM watch_index WHERE project_id = ? AND path >= ? AND path < ? ORDER BY path',
  );
  // INDEXED BY: without ANALYZE statistics SQLite prefers the primary key's project_id prefix, which
  // scans the whole project (measured: 43% of the daemon's CPU at 1,000 writes/s on 20,000 files).
  const anyBelow = db.prepare<[string, string, string], number>('SELECT 1 FROM watch_index WHERE project_id = ? AND path >= ? AND path < ? LIMIT 1').pluck();
  const inoRows = db.prepare<[string, string], RawIndexRow>('SELECT * FROM watch_index INDEXED BY watch_index_ino WHERE ino = ? AND project_id = ?');
  const pathRows = db.prepare<[string, string, number], string>('SELECT path FROM watch_index WHERE project_id = ? AND path > ? ORDER BY path LIMIT ?').pluck();
  const versionRows = db.prepare<[string, string, number], { path: string; versionId: string }>(
    'SELECT path, version_id AS versionId FROM watch_index WHERE project_id = ? AND path > ? ORDER BY path LIMIT ?',
  );
  const put = (projectId: string, r: IndexRow) =>
    putRow.run(projectId, r.path, r.size, r.mtimeNs, r.ino, r.executable ? 1 : 0, r.symlink ? 1 : 0, r.contentHash, r.versionId);
  const putMany = db.transaction((projectId: string, rows: IndexRow[]) => {
    for (const row of rows) put(projectId, row);
  });

  // Index writes are one transaction per INDEX_FLUSH_MS (or INDEX_FLUSH_ROWS rows), not one per file:
  // a burst of saves wrote a WAL commit per captured file (11% of the watch daemon's main thread at
  // 10,000 saves). Until then the rows wait here, and every read sees them: get() and byIno() overlay
  // them, the other queries write them first. A crash loses at most those rows, which are hints.
  const pending = new Map<string, { projectId: string; path: string; row: IndexRow | null }>();
  const keyOf = (projectId: string, path: string) => `${projectId}\0${path}`;
  const writePending = db.transaction(() => {
    for (const { projectId, path, row } of pending.values()) {
      if (row === null) removeRow.run(projectId, path);
      else put(projectId, row);
    }
  });
  const flushPending = () => {
    if (pending.size === 0) return;
    try {
      writePending();
    } finally {
      pending.clear();
    }
  };
  let scheduled: { timer: NodeJS.Timeout | NodeJS.Immediate; soon: boolean } | null = null;
  const unschedule = () => {
    if (scheduled === null) return;
    if (scheduled.soon) clearImmediate(scheduled.timer as NodeJS.Immediate);
    else clearTimeout(scheduled.timer as NodeJS.Timeout);
    scheduled = null;
  };
  const flushLater = () => {
    scheduled = null;
    try {
      flushPending();
    } catch {
      // Rows are hints: dropped ones cost a re-hash at the next scan. A broken database fails the
      // next query, where its caller sees it.
    }
  };
  const stage = (projectId: string, path: string, row: IndexRow | null) => {
    pending.set(keyOf(projectId, path), { projectId, path, row });
    if (pending.size >= INDEX_FLUSH_ROWS) {
      // Enough for a transaction: written at the end of this turn, as before.
      if (scheduled?.soon !== true) {
        unschedule();
        scheduled = { timer: setImmediate(flushLater), soon: true };
      }
    } else if (scheduled === null) {
      const timer = setTimeout(flushLater, flushMs);
      // Never what keeps the process alive: close() writes what waits.
      timer.unref();
      scheduled = { timer, soon: false };
    }
  };
  /** Runs a query after writing what is staged. */
  const flushed = <T>(query: () => T): T => {
    flushPending();
    return query();
  };
  const holdPath = db.prepare('INSERT OR IGNORE INTO guard_held (project_id, path) VALUES (?, ?)');
  const releasePath = db.prepare('DELETE FROM guard_held WHERE project_id = ? AND path = ?');
  const countHeld = db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM guard_held WHERE project_id = ?');
  const holdPaths = db.transaction((projectId: string, paths: string[]) => {
    for (const path of paths) holdPath.run(projectId, path);
  });
  const getFlag = db.prepare<[string, string], { value: string }>('SELECT value FROM project_flags WHERE project_id = ? AND key = ?');
  let addEmptyDir: Database.Statement<[string, string]> | null = null;
  let removeEmptyDir: Database.Statement<[string, string]> | null = null;

  return {
    db,
    index: {
      get: (projectId, path) => {
        const staged = pending.get(keyOf(projectId, path));
        if (staged !== undefined) return staged.row ?? undefined;
        const row = getRow.get(projectId, path);
        return row === undefined ? undefined : fromRaw(row);
      },
      put: (projectId, row) => stage(projectId, row.path, row),
      putMany: (projectId, rows) => flushed(() => putMany(projectId, rows)),
      remove: (projectId, path) => stage(projectId, path, null),
      all: (projectId) => flushed(() => allRows.all(projectId).map(fromRaw)),
      under: (projectId, dir) => flushed(() => underRows.all(projectId, `${dir}/`, `${dir}0`).map(fromRaw)),
      // Asked for every new path (a directory replaced by a file or link): overlaid like byIno, no flush.
      hasBelow: (projectId, dir) => {
        const prefix = `${dir}/`;
        for (const staged of pending.values()) if (staged.projectId === projectId && staged.row !== null && staged.path.startsWith(prefix)) return true;
        return anyBelow.get(projectId, prefix, `${dir}0`) !== undefined;
      },
      // Called for every new path (rename detection): overlaid, so a burst of new files stays batched.
      byIno: (projectId, ino) => {
        const rows = inoRows.all(ino, projectId).map(fromRaw).filter((row) => !pending.has(keyOf(projectId, row.path)));
        for (const staged of pending.values()) if (staged.projectId === projectId && staged.row !== null && staged.row.ino === ino) rows.push(staged.row);
        return rows;
      },
      pathsAfter: (projectId, after, limit) => flushed(() => pathRows.all(projectId, after, limit) as string[]),
      versionsAfter: (projectId, after, limit) => flushed(() => versionRows.all(projectId, after, limit)),
      count: (projectId) => flushed(() => countRows.get(projectId)?.n ?? 0),
      clear: (projectId) =>
        flushed(() => {
          db.prepare('DELETE FROM watch_index WHERE project_id = ?').run(projectId);
        }),
    },
    emptyDirs: {
      // Prepared once: a mount unpacking a tree adds a directory per mkdir.
      add: (projectId, path) => {
        addEmptyDir ??= db.prepare('INSERT OR IGNORE INTO mount_empty_dirs (project_id, path) VALUES (?, ?)');
        addEmptyDir.run(projectId, path);
      },
      remove: (projectId, path) => {
        removeEmptyDir ??= db.prepare('DELETE FROM mount_empty_dirs WHERE project_id = ? AND path = ?');
        removeEmptyDir.run(projectId, path);
      },
      list: (projectId) =>
        db
          .prepare<[string], { path: string }>('SELECT path FROM mount_empty_dirs WHERE project_id = ? ORDER BY path')
          .all(projectId)
          .map((row) => row.path),
    },
    heldDeletes: {
      add: (projectId, paths) => {
        holdPaths(projectId, paths);
        return countHeld.get(projectId)?.n ?? 0;
      },
      remove: (projectId, path) => {
        releasePath.run(projectId, path);
        return countHeld.get(projectId)?.n ?? 0;
      },
      clear: (projectId) => {
        db.prepare('DELETE FROM guard_held WHERE project_id = ?').run(projectId);
      },
    },
    flags: {
      get: <T>(projectId: string, key: string) => {
        const row = getFlag.get(projectId, key);
        return row === undefined ? undefined : (JSON.parse(row.value) as T);
      },
      set: (projectId, key, value) => {
        db.prepare('INSERT OR REPLACE INTO project_flags (project_id, key, value) VALUES (?, ?, ?)').run(projectId, key, JSON.stringify(value));
      },
      delete: (projectId, key) => {
        db.prepare('DELETE FROM project_flags WHERE project_id = ? AND key = ?').run(projectId, key);
      },
    },
    close: () => {
      unschedule();
      if (db.open) {
        flushPending();
        db.close();
      }
    },
  };
}
