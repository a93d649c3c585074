// `strata admin migrate-storage`: moves a home that started on the embedded default (SQLite + the
// home's object directory) to Postgres + S3, losing nothing.
//
// Order makes it safe to stop at any instant: content first (an object in the bucket that nothing
// references yet is harmless, and a rerun skips what is there), then every metadata row in ONE
// Postgres transaction, so the database is either empty or complete. Rows keep their keys, version
// seqs included: snapshot pins reference them, and workstations' sync positions are version seqs
// of the server, so a workstation continues where it was. The identity sequences then continue after
// the highest copied value. Last, a check that compares every table row for row and every referenced
// hash with the bucket (fsck on the target), and the command says what it found.
//
// The server must be stopped (or not yet serving) while it runs: rows written to SQLite after the
// copy would be left behind. So it takes the home's server lock (home-lock.ts): refused with
// HOME_IN_USE while `strata serve` holds it, and a server cannot start on the home until it is done.
// The target must be empty: merging two homes is not a migration.

import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { StrataError } from '../engine/errors.js';
import { homeLayout } from '../engine/local.js';
import type { ContentStore } from '../engine/ports/content-store.js';
import { systemClock } from '../engine/ports/world.js';
import { createLocalContentStore } from '../engine/storage/local-content-store.js';
import type { PgDatabase, Tx } from '../engine/storage/pg-db.js';
import { openPgRepository } from '../engine/storage/pg-repository.js';
import { LATEST_SCHEMA_VERSION, applyMigrations } from '../engine/storage/sqlite-migrations.js';
import { engineOn } from '../engine/local.js';
import type { ContentHash, FsckReport } from '../engine/index.js';
import { existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { acquireMigrateLock } from './home-lock.js';
import { loadPepper, writeSecretFileOnce } from './secrets.js';
import { openServerStore, type StorageUrls } from './server-storage.js';

/** Tables in an order that satisfies every foreign key, with the column ordering copies by. */
const TABLES: ReadonlyArray<{ name: string; order: string; identity?: string }> = [
  { name: 'organizations', order: 'org_id' },
  { name: 'identities', order: 'identity_id' },
  { name: 'org_members', order: 'org_id, identity_id' },
  { name: 'projects', order: 'project_id' },
  { name: 'project_members', order: 'project_id, identity_id' },
  { name: 'api_keys', order: 'key_id' },
  { name: 'audit', order: 'seq', identity: 'seq' },
  { name: 'versions', order: 'seq', identity: 'seq' },
  { name: 'entries', order: 'project_id, path' },
  { name: 'snapshots', order: 'snap', identity: 'snap' },
  { name: 'snapshot_entries', order: 'snap, path' },
  { name: 'snapshot_changes', order: 'snap, path' },
  { name: 'tags', order: 'project_id, tag' },
  { name: 'dataset_shards', order: 'manifest_hash, shard_hash' },
  { name: 'project_objects', order: 'project_id, content_hash' },
  { name: 'identity_links', order: 'issuer, subject' },
  { name: 'identity_preferences', order: 'identity_id' },
  { name: 'sso_connections', order: 'connection_id' },
  { name: 'sso_domains', order: 'connection_id, domain' },
  { name: 'scim_configs', order: 'org_id' },
  { name: 'scim_users', order: 'org_id, identity_id' },
  { name: 'scim_groups', order: 'org_id, group_id' },
  { name: 'scim_group_members', order: 'org_id, group_id, identity_id' },
  { name: 'web_sessions', order: 'session_hmac' },
];

const ROWS_PER_INSERT = 1000;
const OBJECTS_IN_FLIGHT = 8;

export interface MigrateStorageReport {
  objects: { total: number; copied: number; alreadyThere: number; bytesCopied: number };
  tables: Array<{ table: string; rows: number }>;
  /** every table compared row for row (a digest of each side) */
  verified: boolean;
  fsck: FsckReport;
  /**
   * The home's API key pepper as hex, in a 0600 file for STRATA_PEPPER_FILE: a server on Postgres
   * takes its pepper from there (every replica the same), and the copied keys verify only under it.
   */
  pepperFile: string;
}

export type MigrateProgress = (event: { phase: 'objects' | 'metadata' | 'verify'; done: number; total: number }) => void

export interface MigrateStorageOptions {
  home: string;
  to: StorageUrls & { database: string; objects: string };
  env: NodeJS.ProcessEnv;
  onProgress?: MigrateProgress;
}

export async function migrateStorage(options: MigrateStorageOptions): Promise<MigrateStorageReport> {
  const layout = homeLayout(options.home);
  // Before the lock, which would create the directory this says is not there.
  requireSource(layout.metadata);
  const lock = await acquireMigrateLock(options.home);
  try {
    return await migrateLocked(options, layout);
  } finally {
    await lock.release();
  }
}

async function migrateLocked(options: MigrateStorageOptions, layout: ReturnType<typeof homeLayout>): Promise<MigrateStorageReport> {
  const sqlite = openSource(layout.metadata);
  let source: ContentStore | undefined;
  let target: ContentStore | undefined;
  try {
    source = await createLocalContentStore({ root: layout.store, clock: systemClock });
    const repository = await openPgRepository({ url: options.to.database });
    try {
      const db = repository.db;
      // Through the database: small objects become its rows, as on the server (server-storage.ts).
      target = await openServerStore(options.home, { database: undefined, objects: options.to.objects }, options.env, { db });
      const existing = await db.one<{ n: number }>('SELECT count(*) AS n FROM organizations');
      if ((existing?.n ?? 0) > 0) {
        throw new StrataError('INVALID_ARGUMENT', { message: 'The target database already holds organizations: migrate-storage only moves a home into an empty database', details: { field: 'database' } });
      }
      const objects = await copyObjects(source, target, options.onProgress);
      const tables = await copyTables(sqlite, db, options.onProgress);
      options.onProgress?.({ phase: 'verify', done: 0, total: TABLES.length });
      const verified = await compareTables(sqlite, db);
      // fsck through a real engine on the target: every referenced hash present and intact.
      const engine = engineOn({ repository, store: target, home: options.home }, {});
      const fsck = await engine.engine.fsck();
      const pepper = await loadPepper(options.home, { create: false, env: {} });
      const pepperFile = join(layout.secrets, 'pepper.hex');
      await writeSecretFileOnce(pepperFile, Buffer.from(pepper.toString('hex')));
      return { objects, tables, verified, fsck, pepperFile };
    } finally {
      await target?.close();
      target = undefined;
      await repository.close();
    }
  } finally {
    sqlite.close();
    await source?.close();
    await target?.close();
  }
}

function requireSource(file: string): void {
  if (!existsSync(file)) {
    throw new StrataError('INVALID_ARGUMENT', { message: `There is no Strata home to move at ${dirname(file)} (no ${basename(file)})`, details: { field: 'home' } });
  }
}

function openSource(file: string): Database.Database {
  requireSource(file);
  const db = new Database(file, { fileMustExist: true });
  // An older home is brought to the schema the copy expects (the same as `strata serve` would).
  db.pragma('busy_timeout = 30000');
  applyMigrations(db);
  const row = db.prepare('SELECT max(version) AS v FROM schema_migrations').get() as { v: number };
  if (row.v !== LATEST_SCHEMA_VERSION) throw new StrataError('STORAGE_ERROR', { message: `The home's schema is at ${row.v}, expected ${LATEST_SCHEMA_VERSION}` });
  return db;
}

async function copyObjects(source: ContentStore, target: ContentStore, onProgress?: MigrateProgress): Promise<MigrateStorageReport['objects']> {
  const hashes: ContentHash[] = [];
  for await (const object of source.list()) hashes.push(object.hash);
  const report = { total: hashes.length, copied: 0, alreadyThere: 0, bytesCopied: 0 };
  let next = 0;
  const worker = async () => {
    while (next < hashes.length) {
      const hash = hashes[next++]!;
      if (await target.has(hash)) {
        report.alreadyThere += 1;
      } else {
        // expectedHash: the target verifies the bytes it receives against the name they go under.
        const result = await target.put(await source.open(hash), { expectedHash: hash });
        report.copied += 1;
        report.bytesCopied += result.size;
      }
      onProgress?.({ phase: 'objects', done: report.copied + report.alreadyThere, total: report.total });
    }
  };
  await Promise.all(Array.from({ length: OBJECTS_IN_FLIGHT }, worker));
  return report;
}

function columnsOf(sqlite: Database.Database, table: string): string[] {
  return (sqlite.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((column) => column.name);
}

async function copyTables(sqlite: Database.Database, db: PgDatabase, onProgress?: MigrateProgress): Promise<MigrateStorageReport['tables']> {
  return db.tx(async (tx) => {
    const counts: MigrateStorageReport['tables'] = [];
    for (const [index, table] of TABLES.entries()) {
      const columns = columnsOf(sqlite, table.name);
      await requireSameColumns(tx, table.name, columns);
      const list = columns.join(', ');
      let rows = 0;
      let batch: unknown[][] = [];
      const flush = async () => {
        if (batch.length === 0) return;
        const params: unknown[] = [];
        const values = batch.map((row) => `(${row.map((value) => `$${params.push(value)}`).join(', ')})`);
        const overriding = table.identity === undefined ? '' : ' OVERRIDING SYSTEM VALUE';
        await tx.query(`INSERT INTO ${table.name} (${list})${overriding} VALUES ${values.join(', ')}`, params);
        batch = [];
      };
      // iterate() streams from SQLite: a large home is never in memory at once.
      for (const row of sqlite.prepare(`SELECT ${list} FROM ${table.name} ORDER BY ${table.order}`).raw().iterate() as Iterable<unknown[]>) {
        batch.push(row);
        rows += 1;
        if (batch.length >= ROWS_PER_INSERT) await flush();
      }
      await flush();
      if (table.identity !== undefined) {
        // The next generated key continues after the highest copied one (or starts at 1).
        await tx.query(`SELECT setval(pg_get_serial_sequence('${table.name}', '${table.identity}'), (SELECT coalesce(max(${table.identity}), 0) + 1 FROM ${table.name}), false)`);
      }
      counts.push({ table: table.name, rows });
      onProgress?.({ phase: 'metadata', done: index + 1, total: TABLES.length });
    }
    return counts;
  });
}

async function requireSameColumns(tx: Tx, table: string, columns: string[]): Promise<void> {
  const rows = await tx.query<{ column_name: string }>('SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1', [table]);
  const target = new Set(rows.map((row) => row.column_name));
  const missing = columns.filter((column) => !target.has(column));
  if (missing.length > 0 || target.size !== columns.length) {
    throw new StrataError('STORAGE_ERROR', { message: `The Postgres table ${table} does not have the columns of the home's (${missing.join(', ') || 'extra columns'})` });
  }
}

/** Every row of every table, on both sides, in key order through one digest: equal or not. */
async function compareTables(sqlite: Database.Database, db: PgDatabase): Promise<boolean> {
  for (const table of TABLES) {
    const columns = columnsOf(sqlite, table.name);
    const list = columns.join(', ');
    const left = createHash('sha256');
    for (const row of sqlite.prepare(`SELECT ${list} FROM ${table.name} ORDER BY ${table.order}`).raw().iterate() as Iterable<unknown[]>) left.update(`${JSON.stringify(row)}\n`);
    const right = createHash('sha256');
    for await (const row of db.stream<Record<string, unknown>>(`SELECT ${list} FROM ${table.name} ORDER BY ${table.order}`)) {
      right.update(`${JSON.stringify(columns.map((column) => row[column]))}\n`);
    }
    if (left.digest('hex') !== right.digest('hex')) return false;
  }
  return true;
}
