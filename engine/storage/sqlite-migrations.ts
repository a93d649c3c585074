import type { Database } from 'better-sqlite3';
import { StrataError } from '../errors.js';

// Versioned schema. A migration is never edited once released: a change is a new entry at the end.
// All pending migrations run in one IMMEDIATE transaction, so two processes opening the same file at
// once cannot both apply them, and a crash mid-migration leaves the previous schema intact.

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'initial schema',
    sql: `
CREATE TABLE organizations (
  org_id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE identities (
  identity_id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  email TEXT,
  created_at TEXT NOT NULL
);
CREATE TABLE org_members (
  org_id TEXT NOT NULL,
  identity_id TEXT NOT NULL,
  role TEXT NOT NULL,
  PRIMARY KEY (org_id, identity_id)
) WITHOUT ROWID;
CREATE INDEX org_members_by_identity ON org_members (identity_id, org_id);

CREATE TABLE projects (
  project_id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL,
  name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  policy TEXT NOT NULL,
  max_versions INTEGER NOT NULL
);
CREATE INDEX projects_by_org ON projects (org_id, name);
CREATE TABLE project_members (
  project_id TEXT NOT NULL,
  identity_id TEXT NOT NULL,
  access TEXT NOT NULL,
  PRIMARY KEY (project_id, identity_id)
) WITHOUT ROWID;

CREATE TABLE api_keys (
  key_id TEXT PRIMARY KEY,
  environment TEXT NOT NULL,
  secret_hmac TEXT NOT NULL,
  identity_id TEXT NOT NULL,
  org_id TEXT NOT NULL,
  project_id TEXT,
  owner_id TEXT NOT NULL,
  purpose TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT,
  rotate_by TEXT,
  revoked_at TEXT,
  last_used_at TEXT,
  replaced_by TEXT,
  grace_until TEXT
);
CREATE INDEX api_keys_by_org ON api_keys (org_id, created_at);

CREATE TABLE audit (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  audit_id TEXT NOT NULL UNIQUE,
  org_id TEXT NOT NULL,
  actor_id TEXT NOT NULL,
  action TEXT NOT NULL,
  target TEXT NOT NULL,
  details TEXT NOT NULL,
  timestamp TEXT NOT NULL
);
CREATE INDEX audit_by_org ON audit (org_id, seq);

-- seq is the total order of history; AUTOINCREMENT so a pruned seq is never handed out again and a
-- cursor can never point into a reused range.
CREATE TABLE versions (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  version_id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL,
  path TEXT NOT NULL,
  content_hash TEXT,
  size INTEGER NOT NULL,
  actor_id TEXT NOT NULL,
  actor_kind TEXT NOT NULL,
  actor_name TEXT NOT NULL,
  timestamp TEXT NOT NULL,
  kind TEXT NOT NULL,
  restored_from TEXT
);
CREATE INDEX versions_by_path ON versions (project_id, path, seq);
CREATE INDEX versions_by_project ON versions (project_id, seq);
CREATE INDEX versions_by_hash ON versions (content_hash);

-- The current tree. version_seq lets snapshot comparisons test equality on an integer.
CREATE TABLE entries (
  project_id TEXT NOT NULL,
  path TEXT NOT NULL,
  version_seq INTEGER NOT NULL,
  version_id TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  size INTEGER NOT NULL,
  timestamp TEXT NOT NULL,
  PRIMARY KEY (project_id, path)
) WITHOUT ROWID;

-- snap is an internal integer key so each pinned path costs a few bytes, not a 36-byte uuid.
CREATE TABLE snapshots (
  snap INTEGER PRIMARY KEY,
  snapshot_id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL,
  parent_id TEXT,
  seq INTEGER NOT NULL,
  message TEXT NOT NULL,
  actor_id TEXT NOT NULL,
  actor_kind TEXT NOT NULL,
  actor_name TEXT NOT NULL,
  timestamp TEXT NOT NULL,
  file_count INTEGER NOT NULL,
  total_size INTEGER NOT NULL,
  UNIQUE (project_id, seq)
);
-- A pin references the version row itself. The foreign key makes "a pinned version is never pruned"
-- an invariant of the database, and means every hash a snapshot pins is also a version's hash, so the
-- referenced-hash checks need only the versions table.
CREATE TABLE snapshot_entries (
  snap INTEGER NOT NULL REFERENCES snapshots (snap),
  path TEXT NOT NULL,
  version_seq INTEGER NOT NULL REFERENCES versions (seq),
  PRIMARY KEY (snap, path)
) WITHOUT ROWID;
CREATE INDEX snapshot_entries_by_version ON snapshot_entries (version_seq);

CREATE TABLE tags (
  project_id TEXT NOT NULL,
  tag TEXT NOT NULL,
  snap INTEGER NOT NULL REFERENCES snapshots (snap),
  PRIMARY KEY (project_id, tag)
) WITHOUT ROWID;
CREATE INDEX tags_by_snapshot ON tags (snap, tag);
`,
  },
  {
    version: 2,
    name: 'exec bit',
    // The exec bit is part of a version (a chmod +x is a new version with the same content). Rows
    // written before it existed were never executable as far as Strata knew: DEFAULT 0.
    sql: `
ALTER TABLE versions ADD COLUMN executable INTEGER NOT NULL DEFAULT 0;
ALTER TABLE entries ADD COLUMN executable INTEGER NOT NULL DEFAULT 0;
`,
  },
];

export const LATEST_SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/** Applies pending migrations; returns the versions it applied (empty when already up to date). */
export function applyMigrations(db: Database): number[] {
  const run = db.transaction((): number[] => {
    db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL)');
    const row = db.prepare('SELECT max(version) AS version FROM schema_migrations').get() as { version: number | null };
    const current = row.version ?? 0;
    if (current > LATEST_SCHEMA_VERSION) {
      // A newer Strata wrote this file; running old code against it could corrupt it.
      throw new StrataError('STORAGE_ERROR', {
        message: `The metadata database has schema version ${current}, newer than this Strata supports (${LATEST_SCHEMA_VERSION})`,
        details: { schemaVersion: current, supported: LATEST_SCHEMA_VERSION },
      });
    }
    const insert = db.prepare('INSERT INTO schema_migrations (version, name) VALUES (?, ?)');
    const applied: number[] = [];
    for (const migration of MIGRATIONS) {
      if (migration.version <= current) continue;
      db.exec(migration.sql);
      insert.run(migration.version, migration.name);
      applied.push(migration.version);
    }
    return applied;
  });
  return run.immediate();
}
