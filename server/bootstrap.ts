import { bootstrapOrganization, createOrganizationWithOwner } from '../engine/access/bootstrap.js';
import { createIdGenerator } from '../engine/ids.js';
import { StrataError } from '../engine/errors.js';
import Database from 'better-sqlite3';
import { homeLayout, openLocalEngine } from '../engine/local.js';
import { applyMigrations, LATEST_SCHEMA_VERSION } from '../engine/storage/sqlite-migrations.js';
import { type Clock, systemClock } from '../engine/ports/world.js';
import { loadPepper, resolveEnvironment } from './secrets.js';

/**
 * First run of a home: pepper, first organization, an owner service identity and its API key (the
 * plaintext key is in the result only). ALREADY_BOOTSTRAPPED if the home has an organization.
 */
export async function bootstrapHome(options: {
  home: string;
  environment?: string;
  clock?: Clock;
}): Promise<{ apiKey: string; orgId: string; keyId: string; identityId: string }> {
  const environment = resolveEnvironment(options.environment);
  const clock = options.clock ?? systemClock;
  const pepper = await loadPepper(options.home, { create: true });
  const local = await openLocalEngine({ home: options.home, clock });
  try {
    return await bootstrapOrganization({ repository: local.repository, clock, ids: createIdGenerator(clock), pepper, environment });
  } finally {
    await local.close();
  }
}

/** `strata admin org create`: another organization with its own owner key, on an existing home. */
export async function createOrganizationInHome(options: {
  home: string;
  name: string;
  environment?: string;
  clock?: Clock;
}): Promise<{ apiKey: string; orgId: string; keyId: string; identityId: string }> {
  const environment = resolveEnvironment(options.environment);
  const clock = options.clock ?? systemClock;
  const local = await openLocalEngine({ home: options.home, clock });
  try {
    if ((await local.repository.access.listOrganizations()).length === 0) {
      throw new StrataError('INVALID_ARGUMENT', { message: `${options.home} has no organization yet: run \`strata admin bootstrap\` first`, details: { field: 'home' } });
    }
    const pepper = await loadPepper(options.home, { create: false });
    const deps = { repository: local.repository, clock, ids: createIdGenerator(clock), pepper, environment };
    return await createOrganizationWithOwner(deps, { orgName: options.name, ownerName: `owner of ${options.name}` });
  } finally {
    await local.close();
  }
}

/** `strata admin org list`: every organization of the home. */
export async function listOrganizationsInHome(home: string): Promise<Array<{ orgId: string; name: string; createdAt: string }>> {
  const local = await openLocalEngine({ home });
  try {
    return await local.repository.access.listOrganizations();
  } finally {
    await local.close();
  }
}

/**
 * `strata serve --migrate-only`: applies pending schema migrations and returns. Migrations run in one
 * IMMEDIATE transaction (sqlite-migrations.ts), so replicas starting at once apply them once.
 */
export async function migrateHome(home: string): Promise<{ schemaVersion: number; applied: number[] }> {
  const { mkdir } = await import('node:fs/promises');
  await mkdir(home, { recursive: true, mode: 0o700 });
  const db = new Database(homeLayout(home).metadata);
  try {
    db.pragma('busy_timeout = 30000');
    db.pragma('journal_mode = WAL');
    const applied = applyMigrations(db);
    return { schemaVersion: LATEST_SCHEMA_VERSION, applied };
  } finally {
    db.close();
  }
}
