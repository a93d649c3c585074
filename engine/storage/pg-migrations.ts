import type { PoolClient } from 'pg';
import { StrataError } from '../errors.js';
import { checkSchemaVersion } from './schema-version.js';

// The Postgres schema, versioned like SQLite's (sqlite-migrations.ts) but its own chain: migration 1
// is the schema SQLite reached at its migration 15, written once for Postgres. A migration is never
// edited once released: a change is a new entry at the end.
//
// Differences from the SQLite schema, and why:
// - Every column that is ordered or range-scanned by (paths, names, tags, ids in cursors) is
//   COLLATE "C": byte order on UTF-8, which is the code point order SQLite's BINARY collation gives and
//   prefixUpperBound (sqlite-cursor.ts) assumes. A database created with a linguistic collation would
//   otherwise sort 'a/B' and 'a/b' differently from the embedded store and break prefix ranges.
// - Sequences are bigint identity columns (never reused, like SQLite's AUTOINCREMENT); the pool parses
//   int8 as a JS number (pg-db.ts), safe to 2^53.
// - Flags stay integers 0/1 so the SQLite row mappers (sqlite-rows.ts) serve both.

export interface PgMigration {
  version: number;
  name: string;
  sql: string;
}

export const PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    name: 'initial schema (SQLite migrations 1-15)',
    sql: `
CREATE TABLE organizations (
  org_id TEXT COLLATE "C" PRIMARY KEY,
  name TEXT COLLATE "C" NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE identities (
  identity_id TEXT COLLATE "C" PRIMARY KEY,
  kind TEXT NOT NULL,
  name TEXT COLLATE "C" NOT NULL,
  email TEXT COLLATE "C",
  created_at TEXT NOT NULL
);
CREATE TABLE org_members (
  org_id TEXT COLLATE "C" NOT NULL,
  identity_id TEXT COLLATE "C" NOT NULL,
  role TEXT NOT NULL,
  PRIMARY KEY (org_id, identity_id)
);
CREATE INDEX org_members_by_identity ON org_members (identity_id, org_id);

CREATE TABLE projects (
  project_id TEXT COLLATE "C" PRIMARY KEY,
  org_id TEXT COLLATE "C" NOT NULL,
  name TEXT COLLATE "C" NOT NULL,
  created_at TEXT NOT NULL,
  policy TEXT NOT NULL,
  max_versions INTEGER NOT NULL,
  datasets TEXT NOT NULL DEFAULT '{"tracked":[],"thresholdBytes":67108864}'
);
CREATE INDEX projects_by_org ON projects (org_id, name);
CREATE TABLE project_members (
  project_id TEXT COLLATE "C" NOT NULL,
  identity_id TEXT COLLATE "C" NOT NULL,
  access TEXT NOT NULL,
  PRIMARY KEY (project_id, identity_id)
);
CREATE INDEX project_members_by_identity ON project_members (identity_id, project_id);

CREATE TABLE api_keys (
  key_id TEXT COLLATE "C" PRIMARY KEY,
  environment TEXT NOT NULL,
  secret_hmac TEXT NOT NULL,
  identity_id TEXT COLLATE "C" NOT NULL,
  org_id TEXT COLLATE "C" NOT NULL,
  project_id TEXT COLLATE "C",
  owner_id TEXT COLLATE "C" NOT NULL,
  purpose TEXT NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL,
  expires_at TEXT,
  rotate_by TEXT,
  revoked_at TEXT,
  last_used_at TEXT,
  replaced_by TEXT COLLATE "C",
  grace_until TEXT,
  role_cap TEXT
);
CREATE INDEX api_keys_by_org ON api_keys (org_id, created_at);

CREATE TABLE audit (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  audit_id TEXT COLLATE "C" NOT NULL UNIQUE,
  org_id TEXT COLLATE "C" NOT NULL,
  actor_id TEXT COLLATE "C" NOT NULL,
  action TEXT NOT NULL,
  target TEXT NOT NULL,
  details TEXT NOT NULL,
  timestamp TEXT NOT NULL,
  request_id TEXT,
  client_ip TEXT
);
CREATE INDEX audit_by_org ON audit (org_id, seq);

CREATE TABLE versions (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  version_id TEXT COLLATE "C" NOT NULL UNIQUE,
  project_id TEXT COLLATE "C" NOT NULL,
  path TEXT COLLATE "C" NOT NULL,
  content_hash TEXT COLLATE "C",
  size BIGINT NOT NULL,
  actor_id TEXT NOT NULL,
  actor_kind TEXT NOT NULL,
  actor_name TEXT NOT NULL,
  timestamp TEXT NOT NULL,
  kind TEXT NOT NULL,
  restored_from TEXT,
  executable INTEGER NOT NULL DEFAULT 0,
  dataset INTEGER NOT NULL DEFAULT 0,
  base_version_id TEXT,
  pulled INTEGER NOT NULL DEFAULT 0,
  symlink INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX versions_by_path ON versions (project_id, path, seq);
CREATE INDEX versions_by_project ON versions (project_id, seq);
CREATE INDEX versions_by_hash ON versions (content_hash);

CREATE TABLE entries (
  project_id TEXT COLLATE "C" NOT NULL,
  path TEXT COLLATE "C" NOT NULL,
  version_seq BIGINT NOT NULL,
  version_id TEXT COLLATE "C" NOT NULL,
  content_hash TEXT COLLATE "C" NOT NULL,
  size BIGINT NOT NULL,
  timestamp TEXT NOT NULL,
  executable INTEGER NOT NULL DEFAULT 0,
  dataset INTEGER NOT NULL DEFAULT 0,
  symlink INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, path)
);

CREATE TABLE snapshots (
  snap BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  snapshot_id TEXT COLLATE "C" NOT NULL UNIQUE,
  project_id TEXT COLLATE "C" NOT NULL,
  parent_id TEXT COLLATE "C",
  seq BIGINT NOT NULL,
  message TEXT NOT NULL,
  actor_id TEXT NOT NULL,
  actor_kind TEXT NOT NULL,
  actor_name TEXT NOT NULL,
  timestamp TEXT NOT NULL,
  file_count BIGINT NOT NULL,
  total_size BIGINT NOT NULL,
  git_ident TEXT,
  watermark BIGINT,
  base BIGINT REFERENCES snapshots (snap),
  chain_changes BIGINT NOT NULL DEFAULT 0,
  UNIQUE (project_id, seq)
);
CREATE INDEX snapshots_by_base ON snapshots (base, seq);
-- Unlike SQLite's, this table has no foreign keys: a checkpoint copies a whole tree (100,000 rows for
-- 100,000 files) and Postgres checks a key per row with a row lock, 0.88 s of a 1.35 s copy measured.
-- What they guaranteed is kept by the code that could break it: prune never deletes a version a
-- snapshot_entries or snapshot_changes row pins (pg-prune.ts checks both), and snapshots are never
-- deleted. snapshot_changes keeps its keys (a few rows per snapshot).
CREATE TABLE snapshot_entries (
  snap BIGINT NOT NULL,
  path TEXT COLLATE "C" NOT NULL,
  version_seq BIGINT NOT NULL,
  PRIMARY KEY (snap, path)
);
CREATE INDEX snapshot_entries_by_version ON snapshot_entries (version_seq);
CREATE TABLE snapshot_changes (
  snap BIGINT NOT NULL REFERENCES snapshots (snap),
  path TEXT COLLATE "C" NOT NULL,
  version_seq BIGINT REFERENCES versions (seq),
  PRIMARY KEY (snap, path)
);
CREATE INDEX snapshot_changes_by_version ON snapshot_changes (version_seq);
CREATE INDEX snapshot_changes_by_path ON snapshot_changes (path, snap);

CREATE TABLE tags (
  project_id TEXT COLLATE "C" NOT NULL,
  tag TEXT COLLATE "C" NOT NULL,
  snap BIGINT NOT NULL REFERENCES snapshots (snap),
  PRIMARY KEY (project_id, tag)
);
CREATE INDEX tags_by_snapshot ON tags (snap, tag);

CREATE TABLE dataset_shards (
  manifest_hash TEXT COLLATE "C" NOT NULL,
  shard_hash TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (manifest_hash, shard_hash)
);
CREATE INDEX dataset_shards_by_shard ON dataset_shards (shard_hash);

CREATE TABLE project_objects (
  project_id TEXT COLLATE "C" NOT NULL REFERENCES projects (project_id),
  content_hash TEXT COLLATE "C" NOT NULL,
  size BIGINT NOT NULL,
  uploaded_at TEXT NOT NULL,
  PRIMARY KEY (project_id, content_hash)
);

CREATE TABLE identity_links (
  issuer TEXT COLLATE "C" NOT NULL,
  subject TEXT COLLATE "C" NOT NULL,
  identity_id TEXT COLLATE "C" NOT NULL REFERENCES identities (identity_id),
  created_at TEXT NOT NULL,
  PRIMARY KEY (issuer, subject)
);
CREATE INDEX identity_links_by_identity ON identity_links (identity_id);
CREATE TABLE identity_preferences (
  identity_id TEXT COLLATE "C" PRIMARY KEY REFERENCES identities (identity_id),
  preferences TEXT NOT NULL
);

CREATE TABLE sso_connections (
  connection_id TEXT COLLATE "C" PRIMARY KEY,
  org_id TEXT COLLATE "C" NOT NULL REFERENCES organizations (org_id),
  issuer TEXT COLLATE "C" NOT NULL,
  client_id TEXT NOT NULL,
  audience TEXT NOT NULL,
  token_type TEXT NOT NULL,
  scopes TEXT NOT NULL,
  tested_at TEXT,
  tested_subject TEXT,
  active INTEGER NOT NULL,
  activated_at TEXT,
  created_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX sso_connections_by_org ON sso_connections (org_id);
CREATE INDEX sso_connections_by_issuer ON sso_connections (issuer, active);
CREATE TABLE sso_domains (
  connection_id TEXT COLLATE "C" NOT NULL REFERENCES sso_connections (connection_id),
  domain TEXT COLLATE "C" NOT NULL,
  verification_token TEXT NOT NULL,
  verified_at TEXT,
  PRIMARY KEY (connection_id, domain)
);
CREATE UNIQUE INDEX sso_domains_verified ON sso_domains (domain) WHERE verified_at IS NOT NULL;

CREATE TABLE scim_configs (
  org_id TEXT COLLATE "C" PRIMARY KEY REFERENCES organizations (org_id),
  token_id TEXT COLLATE "C" NOT NULL UNIQUE,
  secret_hmac TEXT NOT NULL,
  created_at TEXT NOT NULL,
  default_role TEXT NOT NULL,
  group_roles TEXT NOT NULL
);
CREATE TABLE scim_users (
  org_id TEXT COLLATE "C" NOT NULL,
  identity_id TEXT COLLATE "C" NOT NULL REFERENCES identities (identity_id),
  user_name TEXT COLLATE "C" NOT NULL,
  user_name_key TEXT COLLATE "C" NOT NULL,
  external_id TEXT,
  active INTEGER NOT NULL,
  attributes TEXT NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT NOT NULL,
  version INTEGER NOT NULL,
  PRIMARY KEY (org_id, identity_id)
);
CREATE UNIQUE INDEX scim_users_by_name ON scim_users (org_id, user_name_key);
CREATE TABLE scim_groups (
  org_id TEXT COLLATE "C" NOT NULL,
  group_id TEXT COLLATE "C" NOT NULL,
  display_name TEXT COLLATE "C" NOT NULL,
  display_name_key TEXT COLLATE "C" NOT NULL,
  external_id TEXT,
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT NOT NULL,
  version INTEGER NOT NULL,
  PRIMARY KEY (org_id, group_id)
);
CREATE UNIQUE INDEX scim_groups_by_name ON scim_groups (org_id, display_name_key);
CREATE TABLE scim_group_members (
  org_id TEXT COLLATE "C" NOT NULL,
  group_id TEXT COLLATE "C" NOT NULL,
  identity_id TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (org_id, group_id, identity_id)
);
CREATE INDEX scim_group_members_by_identity ON scim_group_members (org_id, identity_id);

CREATE TABLE web_sessions (
  session_hmac TEXT COLLATE "C" PRIMARY KEY,
  identity_id TEXT COLLATE "C" NOT NULL REFERENCES identities (identity_id),
  org_id TEXT COLLATE "C",
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  revoked_at TEXT
);
CREATE INDEX web_sessions_by_identity ON web_sessions (identity_id);
`,
  },
  {
    version: 2,
    name: 'object touches; uploads by hash',
    // Replicas share one bucket, and one replica's garbage collection must never delete an object
    // another replica is writing or deduplicating against (pg-object-guard.ts). A writer records the
    // hash here, with the database's clock, before it looks whether the bucket has it; a collector
    // spares anything touched within the grace period, measured on that same clock.
    sql: `
CREATE TABLE object_touches (
  content_hash TEXT COLLATE "C" PRIMARY KEY,
  touched_at TIMESTAMPTZ NOT NULL
);
-- "was it uploaded to any project?" is part of every reference check (gc, the guard)
CREATE INDEX project_objects_by_hash ON project_objects (content_hash);
`,
  },
  {
    version: 3,
    name: 'small objects',
    // Objects up to a few KiB (most source files) kept in the database instead of the bucket
    // (pg-small-objects.ts): an S3 request per small object cost more than all of a write's
    // database work. EXTERNAL: content hashes are of mostly incompressible bytes; no pglz attempt.
    sql: `
CREATE TABLE small_objects (
  content_hash TEXT COLLATE "C" PRIMARY KEY,
  size INTEGER NOT NULL,
  content BYTEA NOT NULL
);
ALTER TABLE small_objects ALTER COLUMN content SET STORAGE EXTERNAL;
`,
  },
];

export const PG_LATEST_SCHEMA_VERSION = PG_MIGRATIONS[PG_MIGRATIONS.length - 1]!.version;

/** The advisory lock class of migrations (pg-db.ts names the others). */
const MIGRATION_LOCK = 'pg_advisory_xact_lock(3, 0)';

/**
 * For a caller that must not migrate (fsck, gc, admin commands): the schema holds Strata's tables at
 * this version, or a coded refusal. Nothing is created: migrating there made a check of an empty
 * schema (a wrong URL, or one emptied for pg_restore) create empty tables and report them clean.
 */
export async function requireCurrentPgSchema(client: PoolClient): Promise<void> {
  const { rows } = await client.query<{ exists: boolean }>("SELECT to_regclass('schema_migrations') IS NOT NULL AS exists");
  let current = 0;
  if (rows[0]?.exists === true) {
    const versions = await client.query<{ version: number | null }>('SELECT max(version) AS version FROM schema_migrations');
    current = versions.rows[0]?.version ?? 0;
  }
  checkSchemaVersion(current, PG_LATEST_SCHEMA_VERSION);
}

/**
 * Applies pending migrations in one transaction holding an advisory lock, so replicas starting at
 * once apply them exactly once: the second waits for the first to commit, then finds nothing to do.
 * Postgres DDL is transactional, so a crash mid-migration leaves the previous schema intact.
 */
export async function applyPgMigrations(client: PoolClient, schema?: string): Promise<number[]> {
  await client.query('BEGIN');
  try {
    await client.query(`SELECT ${MIGRATION_LOCK}`);
    // A schema named in the URL is created on first start, like the tables in it (the name was
    // checked against [a-z_][a-z0-9_]* by PgDatabase, so it can be spliced in).
    if (schema !== undefined) await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL)');
    const { rows } = await client.query<{ version: number | null }>('SELECT max(version) AS version FROM schema_migrations');
    const current = rows[0]?.version ?? 0;
    if (current > PG_LATEST_SCHEMA_VERSION) {
      // A newer Strata migrated this database; running old code against it could corrupt it.
      throw new StrataError('STORAGE_ERROR', {
        message: `The metadata database has schema version ${current}, newer than this Strata supports (${PG_LATEST_SCHEMA_VERSION})`,
        details: { schemaVersion: current, supported: PG_LATEST_SCHEMA_VERSION },
      });
    }
    const applied: number[] = [];
    for (const migration of PG_MIGRATIONS) {
      if (migration.version <= current) continue;
      await client.query(migration.sql);
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
      applied.push(migration.version);
    }
    await client.query('COMMIT');
    return applied;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}
