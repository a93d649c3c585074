import type { Database } from 'better-sqlite3';
import { StrataError } from '../errors.js';
import { checkSchemaVersion } from './schema-version.js';

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
  {
    version: 3,
    name: 'datasets',
    // A dataset version points to its manifest; dataset_shards lists the manifest's shards so that
    // garbage collection and fsck see shards as referenced while a version references the manifest
    // (the rows are written with the version; rows of a manifest nothing references any more are
    // inert). Rules: the JSON of DatasetRules, 64 MiB threshold and nothing tracked by default.
    sql: `
ALTER TABLE versions ADD COLUMN dataset INTEGER NOT NULL DEFAULT 0;
ALTER TABLE entries ADD COLUMN dataset INTEGER NOT NULL DEFAULT 0;
ALTER TABLE projects ADD COLUMN datasets TEXT NOT NULL DEFAULT '{"tracked":[],"thresholdBytes":67108864}';
CREATE TABLE dataset_shards (
  manifest_hash TEXT NOT NULL,
  shard_hash TEXT NOT NULL,
  PRIMARY KEY (manifest_hash, shard_hash)
) WITHOUT ROWID;
CREATE INDEX dataset_shards_by_shard ON dataset_shards (shard_hash);
`,
  },
  {
    version: 4,
    name: 'git identity of imported snapshots',
    // A snapshot made from a received git commit keeps the commit's author and committer lines, so
    // exporting it again yields the very same commit id (push, then pull, stays one history).
    sql: `
ALTER TABLE snapshots ADD COLUMN git_ident TEXT;
`,
  },
  {
    version: 5,
    name: 'snapshot change sets',
    // watermark: the project's highest version seq when the snapshot was taken. Every path whose pinned
    // version differs from the parent snapshot's has a version in (parent watermark, watermark] — and
    // at creation that version cannot have been pruned yet (it is the newest of its path) — so those
    // paths and their new pinned version (NULL: gone) are recorded once in snapshot_changes, and a
    // chain can be walked (git export) without diffing whole trees: measured 150 µs per snapshot with
    // snapshot_entries lookups at 10,000 files, ~25 µs from this table. Snapshots from before this
    // migration have no watermark: they are diffed in full.
    sql: `
ALTER TABLE snapshots ADD COLUMN watermark INTEGER;
CREATE TABLE snapshot_changes (
  snap INTEGER NOT NULL REFERENCES snapshots (snap),
  path TEXT NOT NULL,
  version_seq INTEGER REFERENCES versions (seq),
  PRIMARY KEY (snap, path)
) WITHOUT ROWID;
`,
  },
  {
    version: 6,
    name: 'snapshots as changes',
    // A snapshot used to copy every entry of the project into snapshot_entries: O(files) per snapshot,
    // so a push of 300 commits over 2,350 files wrote 700,000 rows (issue 13). Now most snapshots are
    // their change set (snapshot_changes) on top of a checkpoint: \`base\` names the checkpoint whose
    // snapshot_entries they build on (NULL: the snapshot is a checkpoint, with its own full copy).
    // A version a snapshot pins is then in its checkpoint's snapshot_entries or in some
    // snapshot_changes row of its chain: retention checks both (by version). chain_changes counts the
    // change rows from the checkpoint to the snapshot (when to start a new checkpoint); by path, a
    // snapshot finds its parent's version of a changed path in a few index steps.
    sql: `
ALTER TABLE snapshots ADD COLUMN base INTEGER REFERENCES snapshots (snap);
ALTER TABLE snapshots ADD COLUMN chain_changes INTEGER NOT NULL DEFAULT 0;
CREATE INDEX snapshots_by_base ON snapshots (base, seq);
CREATE INDEX snapshot_changes_by_version ON snapshot_changes (version_seq);
CREATE INDEX snapshot_changes_by_path ON snapshot_changes (path, snap);
`,
  },
  {
    version: 7,
    name: 'objects uploaded to a project',
    // Sync sends content by hash before the records that use it (issue 14). The store is shared and
    // deduplicated across projects and organizations, so "is this hash stored?" would tell a client
    // whether anyone anywhere has a file; a project may only count on (and later reference) what it
    // references already or what was uploaded to it, which this table remembers.
    sql: `
CREATE TABLE project_objects (
  project_id TEXT NOT NULL REFERENCES projects (project_id),
  content_hash TEXT NOT NULL,
  size INTEGER NOT NULL,
  uploaded_at TEXT NOT NULL,
  PRIMARY KEY (project_id, content_hash)
) WITHOUT ROWID;
`,
  },
  {
    version: 8,
    name: 'versions as a sync outbox',
    // A workstation's versions are its sync outbox (issue 14): the record IS the queue item, committed
    // in its own transaction, so nothing can be recorded and not queued. What the push needs that the
    // record did not say: the version it replaced (its base on the server, known at commit and never
    // again once retention prunes history), and whether it came from the server (pulled: not pushed back).
    sql: `
ALTER TABLE versions ADD COLUMN base_version_id TEXT;
ALTER TABLE versions ADD COLUMN pulled INTEGER NOT NULL DEFAULT 0;
`,
  },
  {
    version: 9,
    name: 'symbolic links',
    // A version may be a symbolic link (issue 15): its content is the link's target. Like the exec bit
    // (migration 2) it is part of the version and of the entry, and rows written before it existed
    // were regular files: DEFAULT 0.
    sql: `
ALTER TABLE versions ADD COLUMN symlink INTEGER NOT NULL DEFAULT 0;
ALTER TABLE entries ADD COLUMN symlink INTEGER NOT NULL DEFAULT 0;
`,
  },
  {
    version: 10,
    name: 'people: OIDC subjects and preferences',
    // People sign in with OIDC (issue 16): (issuer, subject) is who the token says, identity_id who
    // that is here. The primary key makes a concurrent first sign-in of one person create one user.
    sql: `
CREATE TABLE identity_links (
  issuer TEXT NOT NULL,
  subject TEXT NOT NULL,
  identity_id TEXT NOT NULL REFERENCES identities (identity_id),
  created_at TEXT NOT NULL,
  PRIMARY KEY (issuer, subject)
) WITHOUT ROWID;
CREATE INDEX identity_links_by_identity ON identity_links (identity_id);
CREATE INDEX project_members_by_identity ON project_members (identity_id, project_id);
CREATE TABLE identity_preferences (
  identity_id TEXT PRIMARY KEY REFERENCES identities (identity_id),
  preferences TEXT NOT NULL
);
`,
  },
  {
    version: 11,
    name: "people's own API keys",
    // A key a person makes for CI acts as that person (issue 16): role_cap is the role it is narrowed
    // to. Keys before it were service keys: NULL.
    sql: `
ALTER TABLE api_keys ADD COLUMN role_cap TEXT;
`,
  },
  {
    version: 12,
    name: 'SSO connections',
    // An organization's own identity provider (issue 16). A domain is claimed by one connection once
    // verified (the partial unique index); an issuer by one active connection (checked on activation).
    sql: `
CREATE TABLE sso_connections (
  connection_id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES organizations (org_id),
  issuer TEXT NOT NULL,
  client_id TEXT NOT NULL,
  audience TEXT NOT NULL,
  token_type TEXT NOT NULL,
  scopes TEXT NOT NULL,
  tested_at TEXT,
  tested_subject TEXT,
  active INTEGER NOT NULL,
  activated_at TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX sso_connections_by_org ON sso_connections (org_id);
CREATE INDEX sso_connections_by_issuer ON sso_connections (issuer, active);
CREATE TABLE sso_domains (
  connection_id TEXT NOT NULL REFERENCES sso_connections (connection_id),
  domain TEXT NOT NULL,
  verification_token TEXT NOT NULL,
  verified_at TEXT,
  PRIMARY KEY (connection_id, domain)
) WITHOUT ROWID;
CREATE UNIQUE INDEX sso_domains_verified ON sso_domains (domain) WHERE verified_at IS NOT NULL;
`,
  },
  {
    version: 13,
    name: 'SCIM provisioning',
    // An organization's directory provisions users and groups (issue 16). A provisioned user is an
    // identity (its SCIM id); scim_users holds what the directory says about it in that organization.
    sql: `
CREATE TABLE scim_configs (
  org_id TEXT PRIMARY KEY REFERENCES organizations (org_id),
  token_id TEXT NOT NULL UNIQUE,
  secret_hmac TEXT NOT NULL,
  created_at TEXT NOT NULL,
  default_role TEXT NOT NULL,
  group_roles TEXT NOT NULL
);
CREATE TABLE scim_users (
  org_id TEXT NOT NULL,
  identity_id TEXT NOT NULL REFERENCES identities (identity_id),
  user_name TEXT NOT NULL,
  user_name_key TEXT NOT NULL,
  external_id TEXT,
  active INTEGER NOT NULL,
  attributes TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  version INTEGER NOT NULL,
  PRIMARY KEY (org_id, identity_id)
) WITHOUT ROWID;
CREATE UNIQUE INDEX scim_users_by_name ON scim_users (org_id, user_name_key);
CREATE TABLE scim_groups (
  org_id TEXT NOT NULL,
  group_id TEXT NOT NULL,
  display_name TEXT NOT NULL,
  display_name_key TEXT NOT NULL,
  external_id TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  version INTEGER NOT NULL,
  PRIMARY KEY (org_id, group_id)
) WITHOUT ROWID;
CREATE UNIQUE INDEX scim_groups_by_name ON scim_groups (org_id, display_name_key);
CREATE TABLE scim_group_members (
  org_id TEXT NOT NULL,
  group_id TEXT NOT NULL,
  identity_id TEXT NOT NULL,
  PRIMARY KEY (org_id, group_id, identity_id)
) WITHOUT ROWID;
CREATE INDEX scim_group_members_by_identity ON scim_group_members (org_id, identity_id);
`,
  },
  {
    version: 14,
    name: 'audit request and client',
    // Audit records name the request and the client address that made the change (issue 16).
    sql: `
ALTER TABLE audit ADD COLUMN request_id TEXT;
ALTER TABLE audit ADD COLUMN client_ip TEXT;
`,
  },
  {
    version: 15,
    name: 'web sessions',
    // A browser's sign-in (issue 16): the cookie holds a random id, the row only its HMAC, so a copy of
    // the database signs nobody in. Revoked on logout and when the directory deactivates the person.
    sql: `
CREATE TABLE web_sessions (
  session_hmac TEXT PRIMARY KEY,
  identity_id TEXT NOT NULL REFERENCES identities (identity_id),
  org_id TEXT,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  revoked_at TEXT
);
CREATE INDEX web_sessions_by_identity ON web_sessions (identity_id);
`,
  },
  {
    version: 16,
    name: 'uploads by hash',
    // "Was it uploaded to any project?" is part of every reference check (gc, retention): without
    // this index each check scanned the whole table.
    sql: `
CREATE INDEX project_objects_by_hash ON project_objects (content_hash);
`,
  },
];

export const LATEST_SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/**
 * For a caller that must not migrate (fsck, gc, admin commands): the file holds Strata's tables at
 * this version, or a coded refusal. Migrating there made a check of the wrong file create an empty
 * database and report it clean.
 */
export function requireCurrentSchema(db: Database): void {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
  const current = table === undefined ? 0 : ((db.prepare('SELECT max(version) AS version FROM schema_migrations').get() as { version: number | null }).version ?? 0);
  checkSchemaVersion(current, LATEST_SCHEMA_VERSION);
}

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
