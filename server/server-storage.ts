// Where a server keeps its data: the embedded default (SQLite + a local object directory under the
// home), or a team's Postgres and S3-compatible bucket, chosen by URL:
//   --database postgres://USER@HOST:5432/DB[?schema=NAME]   (env STRATA_DATABASE_URL, or _FILE)
//   --objects  s3://BUCKET[/PREFIX]?endpoint=URL&region=R     (env STRATA_OBJECTS_URL; credentials
//              from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or their _FILE variants)
// Any number of replicas may share one Postgres and one bucket. Each replica keeps a home of its own
// for scratch files only; what must be the same on all of them (the API key pepper) comes from
// STRATA_PEPPER(_FILE), which a Postgres server therefore requires.
// On Postgres + S3, objects up to STRATA_SMALL_OBJECT_MAX_BYTES (64 KiB; 0: none) are rows of the
// database instead of bucket objects (engine/storage/pg-small-objects.ts).

import { join } from 'node:path';
import { StrataError } from '../engine/errors.js';
import { engineOn, type EngineOptions, homeLayout, type LocalEngine, openLocalEngine } from '../engine/local.js';
import type { ContentStore } from '../engine/ports/content-store.js';
import type { MetadataRepository } from '../engine/ports/metadata-repository.js';
import type { PgDatabase } from '../engine/storage/pg-db.js';
import { cachingProjects } from '../engine/storage/caching-projects.js';
import { createPgObjectGuard } from '../engine/storage/pg-object-guard.js';
import type { PgRepository } from '../engine/storage/pg-repository.js';
import { systemClock } from '../engine/ports/world.js';
import { createLocalContentStore } from '../engine/storage/local-content-store.js';
import { openSqliteRepository } from '../engine/storage/sqlite-repository.js';

/** Most source files fit; an S3 request costs more than a row up to about here. */
const DEFAULT_SMALL_OBJECT_MAX_BYTES = 64 * 1024;
/** Rows of a megabyte are where a database stops being the right place for bytes. */
const SMALL_OBJECT_MAX_BYTES_LIMIT = 1024 * 1024;

export interface StorageUrls {
  /** postgres://… ; undefined: SQLite in the home */
  database: string | undefined;
  /** s3://… ; undefined: the home's object directory */
  objects: string | undefined;
}

export type StorageKind = { database: 'sqlite' | 'postgres'; objects: 'local' | 's3' };

/** The URLs from the environment (flags are put there by the CLI; serve-config.ts reads the _FILE secrets). */
export function storageUrls(env: NodeJS.ProcessEnv): StorageUrls {
  const pick = (name: string) => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  return { database: pick('STRATA_DATABASE_URL'), objects: pick('STRATA_OBJECTS_URL') };
}

export function storageKind(urls: StorageUrls): StorageKind {
  return { database: urls.database === undefined ? 'sqlite' : 'postgres', objects: urls.objects === undefined ? 'local' : 's3' };
}

/** The repository alone (migrations, admin commands): opening it migrates it. */
export async function openServerRepository(home: string, urls: StorageUrls): Promise<MetadataRepository> {
  if (urls.database === undefined) {
    const { mkdir } = await import('node:fs/promises');
    await mkdir(home, { recursive: true, mode: 0o700 });
    return openSqliteRepository({ file: homeLayout(home).metadata });
  }
  const { openPgRepository } = await import('../engine/storage/pg-repository.js');
  return openPgRepository({ url: urls.database });
}

export async function openServerStore(
  home: string,
  urls: StorageUrls,
  env: NodeJS.ProcessEnv,
  options: { clock?: EngineOptions['clock']; db?: PgDatabase } = {},
): Promise<ContentStore> {
  if (urls.objects === undefined) return createLocalContentStore({ root: homeLayout(home).store, clock: options.clock ?? systemClock });
  const smallMaxBytes = smallObjectMaxBytes(env);
  const { openS3ContentStore, parseObjectsUrl } = await import('../engine/storage/s3-content-store.js');
  // Replicas share the bucket only through Postgres: there, the guard coordinates their writers
  // and collectors (engine/ports/object-guard.ts).
  const guard = options.db === undefined ? undefined : createPgObjectGuard(options.db);
  const bucket = await openS3ContentStore({
    ...parseObjectsUrl(urls.objects, env),
    scratchDir: join(home, 'tmp'),
    ...(guard === undefined ? {} : { guard }),
  });
  if (options.db === undefined || guard === undefined || smallMaxBytes === 0) return bucket;
  const { withSmallObjectsInPostgres } = await import('../engine/storage/pg-small-objects.js');
  return withSmallObjectsInPostgres({ db: options.db, large: bucket, guard, maxBytes: smallMaxBytes });
}

/** The largest object kept in Postgres (STRATA_SMALL_OBJECT_MAX_BYTES): 0 to 1 MiB, default 64 KiB. */
export function smallObjectMaxBytes(env: NodeJS.ProcessEnv): number {
  const raw = env['STRATA_SMALL_OBJECT_MAX_BYTES']?.trim();
  if (raw === undefined || raw === '') return DEFAULT_SMALL_OBJECT_MAX_BYTES;
  const value = Number(raw);
  if (!(/^\d+$/.test(raw) && Number.isSafeInteger(value) && value <= SMALL_OBJECT_MAX_BYTES_LIMIT)) {
    throw new StrataError('INVALID_ARGUMENT', {
      message: `STRATA_SMALL_OBJECT_MAX_BYTES must be a whole number of bytes from 0 to ${SMALL_OBJECT_MAX_BYTES_LIMIT} (0 keeps every object in the bucket)`,
      details: { field: 'STRATA_SMALL_OBJECT_MAX_BYTES' },
    });
  }
  return value;
}

/**
 * The engine of a server home on the storage its URLs name (the embedded default without them).
 * A failure to reach one store closes the other before it is thrown.
 */
export async function openServerEngine(home: string, env: NodeJS.ProcessEnv, options: EngineOptions = {}): Promise<LocalEngine & { kind: StorageKind }> {
  const urls = storageUrls(env);
  const kind = storageKind(urls);
  if (urls.database === undefined && urls.objects === undefined) return { ...(await openLocalEngine({ home, ...options })), kind };
  const { mkdir } = await import('node:fs/promises');
  await mkdir(home, { recursive: true, mode: 0o700 });
  const repository = await openServerRepository(home, urls);
  let store: ContentStore;
  try {
    const db = 'db' in repository ? (repository as PgRepository).db : undefined;
    store = await openServerStore(home, urls, env, { ...options, ...(db === undefined ? {} : { db }) });
  } catch (error) {
    await repository.close();
    throw error;
  }
  // Every request reads its project; on Postgres that read is remembered for a moment (caching-projects.ts).
  const wrap = options.wrapRepository;
  const clock = options.clock ?? systemClock;
  const cached = (r: MetadataRepository) => (kind.database === 'postgres' ? cachingProjects(r, clock) : r);
  return { ...engineOn({ repository, store, home }, { ...options, wrapRepository: (r) => (wrap === undefined ? cached(r) : wrap(cached(r))) }), kind };
}

/** A Postgres server's replicas must share one pepper, so it cannot be made up in one home. */
export function requireSharedPepper(urls: StorageUrls, env: NodeJS.ProcessEnv): void {
  if (urls.database === undefined) return;
  if (!env['STRATA_PEPPER'] && !env['STRATA_PEPPER_FILE']) {
    throw new StrataError('INVALID_ARGUMENT', {
      message: 'A server on Postgres needs the API key pepper every replica shares: set STRATA_PEPPER_FILE (or pepperFile in --config) to a file of 32 random bytes, hex',
      details: { field: 'STRATA_PEPPER' },
    });
  }
}
