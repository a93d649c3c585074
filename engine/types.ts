// The resources of docs/design.md §2, as the engine and the API see them (JSON is camelCase).

/** `blake3:<64 lowercase hex>` */
export type ContentHash = `blake3:${string}`;

export type ActorKind = 'user' | 'service' | 'local';

export interface Actor {
  id: string;
  kind: ActorKind;
  name: string;
}

export type VersionKind = 'write' | 'delete' | 'restore' | 'snapshot-restore' | 'import';

/**
 * An immutable version record. `contentHash === null` marks a tombstone: after this version the path
 * does not exist (a delete, or a snapshot restore that removed the path).
 */
export interface VersionRecord {
  versionId: string;
  projectId: string;
  path: string;
  contentHash: ContentHash | null;
  size: number;
  actor: Actor;
  /** RFC 3339, UTC, millisecond precision */
  timestamp: string;
  kind: VersionKind;
  restoredFrom: string | null;
  /** the file's exec bit (POSIX `x`); false for tombstones */
  executable: boolean;
  /**
   * A symbolic link: the content is the link's target, byte for byte as readlink(2) returns it.
   * Never executable, never a dataset; false for tombstones.
   */
  symlink: boolean;
  /**
   * A dataset: `contentHash` names its manifest (engine/datasets/manifest.ts), which lists the shards;
   * `size` is the size of the assembled bytes. Reads return the assembled bytes.
   */
  dataset: boolean;
}

/** The current state of one path in a project's tree. */
export interface Entry {
  path: string;
  versionId: string;
  contentHash: ContentHash;
  size: number;
  /** when the current version was written */
  timestamp: string;
  executable: boolean;
  /** a symbolic link: the content is its target (VersionRecord.symlink) */
  symlink: boolean;
  dataset: boolean;
}

/** The author and committer lines (`Name <email> <seconds> <tz>`) of the git commit a snapshot came from. */
export interface SnapshotGitIdent {
  author: string;
  committer: string;
}

export interface Snapshot {
  snapshotId: string;
  projectId: string;
  parentId: string | null;
  seq: number;
  message: string;
  actor: Actor;
  timestamp: string;
  tags: string[];
  fileCount: number;
  totalSize: number;
  /** present when the snapshot was received from git (fs/git/receive) */
  git?: SnapshotGitIdent;
}

export interface SnapshotEntry {
  path: string;
  versionId: string;
  contentHash: ContentHash;
  size: number;
  executable: boolean;
  symlink: boolean;
  dataset: boolean;
}

export type DiffChange = 'added' | 'removed' | 'modified';

export interface DiffItem {
  path: string;
  change: DiffChange;
  /** the side the diff starts from (older snapshot); null when added */
  before: SnapshotEntry | null;
  /** the side the diff ends at (newer snapshot, or the current tree); null when removed */
  after: SnapshotEntry | null;
}

export interface VersioningPolicy {
  /** Extensions (lowercase, with the dot) that are always versioned, whatever their size. */
  alwaysExtensions: string[];
  /** Files larger than this are versioned only if their extension is on the allowlist. */
  sizeThreshold: number;
  /** Extensions (lowercase, with the dot) allowed to be versioned above the threshold. */
  largeFileAllowlist: string[];
}

export interface RetentionSetting {
  projectId: string;
  /** 0 = unlimited */
  maxVersions: number;
}

/** Which files of a project are stored as datasets (content-defined shards behind a manifest). */
export interface DatasetRules {
  /** paths and globs (picomatch syntax, project-relative) that are always datasets */
  tracked: string[];
  /** any file larger than this is a dataset too */
  thresholdBytes: number;
}

export interface Project {
  projectId: string;
  orgId: string;
  name: string;
  createdAt: string;
  policy: VersioningPolicy;
  retention: { maxVersions: number };
  datasets: DatasetRules;
}

export interface Page<T> {
  items: T[];
  /** opaque; absent on the last page */
  nextCursor?: string;
}

// --- identity and access -------------------------------------------------------------------------

export type OrgRole = 'owner' | 'admin' | 'member' | 'viewer';
export type ProjectAccess = 'read' | 'write';
export type IdentityKind = 'user' | 'service';

export interface Organization {
  orgId: string;
  name: string;
  createdAt: string;
}

export interface Identity {
  identityId: string;
  kind: IdentityKind;
  name: string;
  email: string | null;
  createdAt: string;
}

/** A domain an SSO connection routes: proven by a DNS TXT record holding the verification token. */
export interface SsoDomain {
  domain: string;
  /** publish `strata-domain-verification=<token>` as a TXT record of the domain */
  verificationToken: string;
  verifiedAt: string | null;
}

/** An organization's own identity provider: its people sign in there, their tokens are trusted here. */
export interface SsoConnection {
  connectionId: string;
  orgId: string;
  issuer: string;
  /** the public client `strata login` uses at that issuer */
  clientId: string;
  /** the `aud` of its access tokens for this server */
  audience: string;
  tokenType: 'at+jwt' | 'any';
  scopes: string[];
  domains: SsoDomain[];
  /** when a test sign-in with an identity from the issuer succeeded, and whose */
  testedAt: string | null;
  testedSubject: string | null;
  active: boolean;
  activatedAt: string | null;
  createdAt: string;
}

/** SCIM provisioning of one organization: its bearer token (HMAC only) and how groups map to roles. */
export interface ScimConfig {
  orgId: string;
  tokenId: string;
  secretHmac: string;
  createdAt: string;
  /** role of a provisioned, active user in no mapped group */
  defaultRole: Exclude<OrgRole, 'owner'>;
  /** group displayName → role; a user gets the highest role of their mapped groups */
  groupRoles: Record<string, Exclude<OrgRole, 'owner'>>;
}

/** A user provisioned by an organization's directory. `identityId` is its SCIM id. */
export interface ScimUser {
  orgId: string;
  identityId: string;
  userName: string;
  externalId: string | null;
  active: boolean;
  /** every other SCIM attribute as the directory sent it (name, emails, displayName, extensions…) */
  attributes: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
  version: number;
}

export interface ScimGroup {
  orgId: string;
  groupId: string;
  displayName: string;
  externalId: string | null;
  /** identity ids of the members (provisioned users of the same organization) */
  members: string[];
  createdAt: string;
  updatedAt: string;
  version: number;
}

/** A browser's sign-in: the cookie holds the id, the database only its HMAC. */
export interface WebSession {
  sessionHmac: string;
  identityId: string;
  /** the organization an SSO sign-in speaks for; null for the hosted identity */
  orgId: string | null;
  createdAt: string;
  expiresAt: string;
  revokedAt: string | null;
}

/** An OIDC subject of a trusted issuer, mapped to the internal identity it signs in as. */
export interface IdentityLink {
  issuer: string;
  subject: string;
  identityId: string;
  createdAt: string;
}

export interface OrgMembership {
  orgId: string;
  identityId: string;
  role: OrgRole;
}

export interface ProjectMembership {
  projectId: string;
  identityId: string;
  access: ProjectAccess;
}

/** What is stored for an API key: never the secret, only HMAC-SHA256(pepper, secret). */
export interface ApiKeyRecord {
  keyId: string;
  environment: string;
  secretHmac: string;
  /** the service identity the key authenticates as */
  identityId: string;
  orgId: string;
  /** null = organization-wide */
  projectId: string | null;
  ownerId: string;
  purpose: string;
  createdAt: string;
  expiresAt: string | null;
  rotateBy: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
  /** set on the old key when it is rotated: it keeps working until graceUntil */
  replacedBy: string | null;
  graceUntil: string | null;
  /**
   * A person's own key: it authenticates as `identityId` (the person), with their organization role
   * lowered to this. null: a service key, authenticating as its own service identity.
   */
  roleCap: OrgRole | null;
}

export interface AuditRecord {
  auditId: string;
  orgId: string;
  actorId: string;
  action: string;
  target: string;
  details: Record<string, unknown>;
  timestamp: string;
  /** the request that made the change (null: not made over the API, e.g. `strata admin`) */
  requestId: string | null;
  /** its client address, through the configured trusted proxies only */
  clientIp: string | null;
}
