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

/**
 * The repository alone (bootstrap, admin commands). Opening it migrates it unless `migrate` is
 * false: only `strata serve` (and --migrate-only) and `admin bootstrap`, the documented first step
 * before serve, create or migrate tables.
 */
export async function openServerRepository(home: string, urls: StorageUrls, options: { migrate?: boolean } = {}): Promise<MetadataRepository> {
  const migrate = options.migrate ?? true;
  try {
    if (urls.database === undefined) {
      if (migrate) {
        const { mkdir } = await import('node:fs/promises');
        await mkdir(home, { recursive: true, mode: 0o700 });
      }
      return openSqliteRepository({ file: homeLayout(home).metadata, migrate });
    }
    const { openPgRepository } = await import('../engine/storage/pg-repository.js');
    return await openPgRepository({ url: urls.database, migrate });
  } catch (error) {
    throw noStrataData(error, home, urls);
  }
}

/**
 * What a maintenance command (fsck, gc) opens: the storage as it is, never migrated. A database without
 * Strata's tables, or a Postgres one without an organization (a server's is bootstrapped before it
 * serves), is refused: checking it would report nothing wrong with nothing, and creating tables in it
 * would leave a schema meant for pg_restore no longer empty.
 */
async function requireServerData(repository: MetadataRepository, home: string, urls: StorageUrls): Promise<void> {
  if (urls.database === undefined) return;
  if ((await repository.access.listOrganizations()).length > 0) return;
  throw noStrataData(new StrataError('NO_STRATA_DATA', { message: 'The metadata database has no organization', details: { reason: 'no-organization' } }), home, urls);
}

/** NO_STRATA_DATA said for the operator: where (the home, or the database's schema; never the URL) and what to do. */
function noStrataData(error: unknown, home: string, urls: StorageUrls): unknown {
  if (!(error instanceof StrataError) || error.code !== 'NO_STRATA_DATA') return error;
  const reason = error.details?.['reason'];
  if (urls.database === undefined) {
    return new StrataError('NO_STRATA_DATA', {
      message:
        `${home} holds no Strata data (no metadata database): create a server home with \`strata admin bootstrap --home ${home}\` ` +
        `(\`strata serve --migrate-only --home ${home}\` creates only the tables; a workstation's daemon creates its home when it starts), or restore a backup of the home into it`,
      details: { ...error.details, home },
      cause: error,
    });
  }
  const schema = new URL(urls.database).searchParams.get('schema') ?? 'the default search_path';
  const what = reason === 'no-organization' ? 'tables but no organization' : 'no Strata tables';
  return new StrataError('NO_STRATA_DATA', {
    message:
      `The metadata database holds no Strata data (${what} in schema ${schema}): create it with \`strata serve --migrate-only\`, then \`strata admin bootstrap\`, ` +
      'or restore a backup into it (pg_restore, docs/server.md "Backup and restore"); check that --config or STRATA_DATABASE_URL names the right database and schema',
    details: { ...error.details, schema },
    cause: error,
  });
}

export async function openServerStore(
  home: string,
  urls: StorageUrls,
  env: NodeJS.ProcessEnv,
  options: { clock?: EngineOptions['clock']; db?: PgDatabase } = {},
): Promise<ContentStore> {
  return (await openServerStores(home, urls, env, options)).store;
}

/**
 * The content store, and `objects`: the store of the bucket (or of the home) alone, under the tier
 * of small objects in Postgres. Readiness probes that one: the tier asks Postgres first.
 */
async function openServerStores(
  home: string,
  urls: StorageUrls,
  env: NodeJS.ProcessEnv,
  options: { clock?: EngineOptions['clock']; db?: PgDatabase } = {},
): Promise<{ store: ContentStore; objects: ContentStore }> {
  if (urls.objects === undefined) {
    const local = await createLocalContentStore({ root: homeLayout(home).store, clock: options.clock ?? systemClock });
    return { store: local, objects: local };
  }
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
  if (options.db === undefined || guard === undefined || smallMaxBytes === 0) return { store: bucket, objects: bucket };
  const { withSmallObjectsInPostgres } = await import('../engine/storage/pg-small-objects.js');
  return { store: withSmallObjectsInPostgres({ db: options.db, large: bucket, guard, maxBytes: smallMaxBytes }), objects: bucket };
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
export async function openServerEngine(
  home: string,
  env: NodeJS.ProcessEnv,
  options: EngineOptions & { migrate?: boolean } = {},
): Promise<LocalEngine & { kind: StorageKind; objects: ContentStore }> {
  const urls = storageUrls(env);
  const kind = storageKind(urls);
  // Only `strata serve` migrates (the default); fsck and gc pass false (requireServerData).
  const migrate = options.migrate ?? true;
  if (urls.database === undefined && urls.objects === undefined) {
    const local = await openLocalEngine({ home, ...options, migrate }).catch((error: unknown) => {
      throw noStrataData(error, home, urls);
    });
    return { ...local, kind, objects: local.store };
  }
  const repository = await openServerRepository(home, urls, { migrate });
  let store: ContentStore;
  let objects: ContentStore;
  try {
    if (!migrate) await requireServerData(repository, home, urls);
    const { mkdir } = await import('node:fs/promises');
    await mkdir(home, { recursive: true, mode: 0o700 });
    const db = 'db' in repository ? (repository as PgRepository).db : undefined;
    ({ store, objects } = await openServerStores(home, urls, env, { ...options, ...(db === undefined ? {} : { db }) }));
  } catch (error) {
    await repository.close();
    throw error;
  }
  // Every request reads its project; on Postgres that read is remembered for a moment (caching-projects.ts).
  const wrap = options.wrapRepository;
  const clock = options.clock ?? systemClock;
  const cached = (r: MetadataRepository) => (kind.database === 'postgres' ? cachingProjects(r, clock) : r);
  return { ...engineOn({ repository, store, home }, { ...options, wrapRepository: (r) => (wrap === undefined ? cached(r) : wrap(cached(r))) }), kind, objects };
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
