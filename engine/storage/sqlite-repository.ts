import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { StrataError } from '../errors.js';
import type { MetadataRepository } from '../ports/metadata-repository.js';
import { createSqliteAccess } from './sqlite-access.js';
import { applyMigrations, requireCurrentSchema } from './sqlite-migrations.js';
import { createSqliteProjects } from './sqlite-projects.js';
import { storageError } from './sqlite-rows.js';
import { createSqliteSnapshots } from './sqlite-snapshots.js';
import { createSqliteVersions } from './sqlite-versions.js';
import { SqliteCheckpointer } from './sqlite-checkpointer.js';
import { acknowledgeDurably, WalSync } from './sqlite-wal-sync.js';
import { reserveWalIndex } from './wal-index-space.js';

export interface SqliteRepositoryOptions {
  /** the database file; created (with its schema) if missing */
  file: string;
  /**
   * false: neither create the file nor migrate it; a missing file, or one without Strata's tables at
   * this version, is refused (NO_STRATA_DATA, SCHEMA_NOT_CURRENT). For fsck, gc and admin commands.
   */
  migrate?: boolean;
}

/**
 * The embedded metadata repository: one better-sqlite3 connection. better-sqlite3 is synchronous, so
 * every method does its work (one transaction) before returning an already-settled promise; no
 * transaction ever spans an await, and the event loop is never handed back mid-transaction.
 */
export function openSqliteRepository(options: SqliteRepositoryOptions): MetadataRepository {
  const migrate = options.migrate ?? true;
  // Checked first: better-sqlite3 says neither a missing file nor a missing directory with a code.
  if (!migrate && !existsSync(options.file)) {
    throw new StrataError('NO_STRATA_DATA', { message: 'There is no Strata metadata database here', details: { reason: 'no-database' } });
  }
  let db: Database.Database;
  try {
    db = new Database(options.file, { fileMustExist: !migrate });
  } catch (error) {
    throw storageError(error);
  }
  try {
    // Set first so that switching to WAL and migrating wait for another process's lock.
    db.pragma('busy_timeout = 5000');
    // WAL: readers never block the writer. Migrations commit with synchronous=FULL; afterwards the
    // connection runs NORMAL and every changing call is acknowledged only after an fdatasync of the
    // WAL off the main thread (sqlite-wal-sync.ts explains why that is as durable as FULL).
    db.pragma('journal_mode = WAL');
    // Before the first commit (a migration): it writes into the wal-index (wal-index-space.ts).
    reserveWalIndex(db, options.file);
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    // Up to 16 MiB of page cache (allocated only as used; the default is 2 MiB). A 100,000-entry
    // snapshot touches more than 2 MiB of index pages: measured 352 ms -> 242 ms for its creation with
    // 64 MiB, 142 ms with 16 MiB (bench/snapshot-100k.ts). 64 MiB filled up while the daemon imported a
    // 200,000-file project and took its RSS to 325-355 MiB (target 300 MB; 240-277 MiB with 8-16 MiB).
    db.pragma('cache_size = -16384');
    if (migrate) applyMigrations(db);
    else requireCurrentSchema(db);
    db.pragma('synchronous = NORMAL');
    // Checkpoints run on their own thread (sqlite-checkpointer.ts), not inside our commits.
    db.pragma('wal_autocheckpoint = 0');
  } catch (error) {
    db.close();
    throw storageError(error);
  }
  const open = db;
  const totalChanges = open.prepare('SELECT total_changes()').pluck();
  const checkpointer = new SqliteCheckpointer(options.file, () => {
    if (open.open) open.pragma('wal_autocheckpoint = 1000');
  });
  const repository: MetadataRepository = {
    projects: createSqliteProjects(open),
    versions: createSqliteVersions(open),
    snapshots: createSqliteSnapshots(open),
    access: createSqliteAccess(open),
    close: async () => {
      // The checkpoint thread's connection closes first, so ours is the last one: closing it
      // checkpoints what is left and removes the WAL.
      await checkpointer.close();
      if (open.open) open.close();
    },
  };
  return acknowledgeDurably(repository, () => (open.open ? (totalChanges.get() as number) : 0), new WalSync(`${options.file}-wal`), checkpointer);
}
