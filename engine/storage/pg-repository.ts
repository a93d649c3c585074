import type { MetadataRepository } from '../ports/metadata-repository.js';
import { PgDatabase, type PgOptions, pgError } from './pg-db.js';
import { applyPgMigrations } from './pg-migrations.js';
import { createPgProjects } from './pg-projects.js';
import { createPgAccess } from './pg-access.js';
import { createPgSnapshots } from './pg-snapshots.js';
import { createPgVersions } from './pg-versions.js';

export type PgRepository = MetadataRepository & { readonly db: PgDatabase };

/**
 * The server-grade metadata repository: Postgres through a pool (pg-db.ts). Opening migrates the
 * schema (safe when replicas start at once) and checks the connection, so a wrong URL fails at start.
 */
export async function openPgRepository(options: PgOptions): Promise<PgRepository> {
  const db = new PgDatabase(options);
  try {
    const client = await db.pool.connect();
    try {
      await applyPgMigrations(client, db.schema);
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
