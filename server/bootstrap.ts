import { bootstrapOrganization, createOrganizationWithOwner } from '../engine/access/bootstrap.js';
import { createIdGenerator } from '../engine/ids.js';
import { StrataError } from '../engine/errors.js';
import type { MetadataRepository } from '../engine/ports/metadata-repository.js';
import { type Clock, systemClock } from '../engine/ports/world.js';
import { PG_LATEST_SCHEMA_VERSION } from '../engine/storage/pg-migrations.js';
import { LATEST_SCHEMA_VERSION } from '../engine/storage/sqlite-migrations.js';
import { withHomeClaim } from './home-claim.js';
import { loadPepper, resolveEnvironment } from './secrets.js';
import { openServerRepository, requireSharedPepper, storageUrls } from './server-storage.js';

// The operator's commands on a server home, in-process: they work on the metadata the home's storage
// URLs name (STRATA_DATABASE_URL: Postgres; else the home's SQLite), never through the API.

async function withRepository<T>(home: string, env: NodeJS.ProcessEnv, fn: (repository: MetadataRepository) => Promise<T>, options: { migrate: boolean }): Promise<T> {
  const run = async () => {
    const repository = await openServerRepository(home, storageUrls(env), options);
    try {
      return await fn(repository);
    } finally {
      await repository.close();
    }
  };
  // The home's SQLite is used from one host at a time (home-claim.ts); Postgres needs no such care.
  return storageUrls(env).database === undefined ? withHomeClaim(home, 'strata admin', run, { existingOnly: !options.migrate }) : run();
}

/**
 * First run of a home: pepper, first organization, an owner service identity and its API key (the
 * plaintext key is in the result only). ALREADY_BOOTSTRAPPED if the home has an organization.
 */
export async function bootstrapHome(options: {
  home: string;
  environment?: string;
  clock?: Clock;
  env?: NodeJS.ProcessEnv;
}): Promise<{ apiKey: string; orgId: string; keyId: string; identityId: string }> {
  const env = options.env ?? process.env;
  const environment = resolveEnvironment(options.environment, env);
  const clock = options.clock ?? systemClock;
  requireSharedPepper(storageUrls(env), env);
  const pepper = await loadPepper(options.home, { create: true, env });
  // The documented first step before `strata serve`: it may create the tables.
  return withRepository(options.home, env, (repository) => bootstrapOrganization({ repository, clock, ids: createIdGenerator(clock), pepper, environment }), { migrate: true });
}

/** `strata admin org create`: another organization with its own owner key, on an existing home. */
export async function createOrganizationInHome(options: {
  home: string;
  name: string;
  environment?: string;
  clock?: Clock;
  env?: NodeJS.ProcessEnv;
}): Promise<{ apiKey: string; orgId: string; keyId: string; identityId: string }> {
  const env = options.env ?? process.env;
  const environment = resolveEnvironment(options.environment, env);
  const clock = options.clock ?? systemClock;
  return withRepository(options.home, env, async (repository) => {
    if ((await repository.access.listOrganizations()).length === 0) {
      throw new StrataError('INVALID_ARGUMENT', { message: `${options.home} has no organization yet: run \`strata admin bootstrap\` first`, details: { field: 'home' } });
    }
    requireSharedPepper(storageUrls(env), env);
    const pepper = await loadPepper(options.home, { create: false, env });
    const deps = { repository, clock, ids: createIdGenerator(clock), pepper, environment };
    return createOrganizationWithOwner(deps, { orgName: options.name, ownerName: `owner of ${options.name}` });
  }, { migrate: false });
}

/** `strata admin org list`: every organization of the home. */
export async function listOrganizationsInHome(home: string, env: NodeJS.ProcessEnv = process.env): Promise<Array<{ orgId: string; name: string; createdAt: string }>> {
  return withRepository(home, env, (repository) => repository.access.listOrganizations(), { migrate: false });
}

/**
 * `strata serve --migrate-only`: applies pending schema migrations and returns. Opening a repository
 * migrates it, and both databases make that safe for replicas starting at once (SQLite: one IMMEDIATE
 * transaction, sqlite-migrations.ts; Postgres: an advisory lock, pg-migrations.ts).
 */
export async function migrateHome(home: string, env: NodeJS.ProcessEnv = process.env): Promise<{ database: 'sqlite' | 'postgres'; schemaVersion: number; applied: number[] }> {
  const urls = storageUrls(env);
  if (urls.database === undefined) {
    const { mkdir } = await import('node:fs/promises');
    const Database = (await import('better-sqlite3')).default;
    const { applyMigrations } = await import('../engine/storage/sqlite-migrations.js');
    const { homeLayout } = await import('../engine/local.js');
    await mkdir(home, { recursive: true, mode: 0o700 });
    return withHomeClaim(home, 'strata serve --migrate-only', async () => {
      const db = new Database(homeLayout(home).metadata);
      try {
        db.pragma('busy_timeout = 30000');
        db.pragma('journal_mode = WAL');
        return { database: 'sqlite' as const, schemaVersion: LATEST_SCHEMA_VERSION, applied: applyMigrations(db) };
      } finally {
        db.close();
      }
    });
  }
  const { PgDatabase, pgError } = await import('../engine/storage/pg-db.js');
  const { applyPgMigrations } = await import('../engine/storage/pg-migrations.js');
  const db = new PgDatabase({ url: urls.database, max: 1 });
  try {
    const client = await db.pool.connect();
    try {
      return { database: 'postgres', schemaVersion: PG_LATEST_SCHEMA_VERSION, applied: await applyPgMigrations(client, db.schema) };
    } finally {
      client.release();
    }
  } catch (error) {
    throw pgError(error);
  } finally {
    await db.close();
  }
}
