import type { MetadataRepository } from '../ports/metadata-repository.js';
import { PgDatabase, type PgOptions, pgError } from './pg-db.js';
import { applyPgMigrations, requireCurrentPgSchema } from './pg-migrations.js';
import { createPgProjects } from './pg-projects.js';
import { createPgAccess } from './pg-access.js';
import { createPgSnapshots } from './pg-snapshots.js';
import { createPgVersions } from './pg-versions.js';

export type PgRepository = MetadataRepository & { readonly db: PgDatabase };

/**
 * The server-grade metadata repository: Postgres through a pool (pg-db.ts). Opening migrates the
 * schema (safe when replicas start at once) and checks the connection, so a wrong URL fails at start.
 * `migrate: false` (fsck, gc, admin commands) creates nothing: a schema without Strata's tables at
 * this version is refused (NO_STRATA_DATA, SCHEMA_NOT_CURRENT).
 */
export async function openPgRepository(options: PgOptions & { migrate?: boolean }): Promise<PgRepository> {
  const db = new PgDatabase(options);
  try {
    const client = await db.pool.connect();
    try {
      if (options.migrate === false) await requireCurrentPgSchema(client);
      else await applyPgMigrations(client, db.schema);
    } finally {
      client.release();
    }
  } catch (error) {
    await db.close().catch(() => {});
    throw pgError(error);
  }
  return {
    db,
    projects: createPgProjects(db),
    versions: createPgVersions(db),
    snapshots: createPgSnapshots(db),
    access: createPgAccess(db),
    close: () => db.close(),
  };
}
