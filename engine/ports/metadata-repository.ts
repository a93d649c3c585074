import type {
  ApiKeyRecord,
  AuditRecord,
  ContentHash,
  DiffItem,
  Entry,
  Identity,
  IdentityLink,
  OrgMembership,
  OrgRole,
  Organization,
  Page,
  Project,
  ProjectAccess,
  ProjectMembership,
  ScimConfig,
  ScimGroup,
  ScimUser,
  Snapshot,
  SnapshotEntry,
  SsoConnection,
  WebSession,
  VersionRecord,
} from '../types.js';
import type { IdAbbreviation } from '../short-ids.js';

/**
 * The metadata repository: every method is atomic on its own (one transaction), so the engine never
 * needs a transaction that spans an `await`. That keeps SQLite (synchronous, one connection) and
 * Postgres (a pool) behind the same interface, checked by test/conformance/metadata-repository.ts.
 *
 * Cursors are opaque strings produced by the repository; a malformed one is INVALID_CURSOR.
 */
export interface MetadataRepository {
  readonly projects: ProjectRepository;
  readonly versions: VersionRepository;
  readonly snapshots: SnapshotRepository;
  readonly access: AccessRepository;
  close(): Promise<void>;
}

export interface ProjectRepository {
  create(project: Project): Promise<void>;
  get(projectId: string): Promise<Project | null>;
  /** all projects of the organization, by name */
  list(orgId: string): Promise<Project[]>;
  update(projectId: string, patch: Partial<Pick<Project, 'name' | 'policy' | 'retention' | 'datasets'>>): Promise<Project>;
}

/** A version to commit, with an optional precondition on the path's current version. */
export interface VersionCommit {
  record: VersionRecord;
  /**
   * If present, the commit of this record happens only if the path's current version is this id
   * (null = the path must not exist). Otherwise the record is rejected with STALE_BASE_VERSION.
   */
  expectedCurrent?: string | null;
  /**
   * For a dataset record: the shard hashes its manifest lists (distinct). They count as referenced
   * (gc, fsck) for as long as a version references the manifest.
   */
  shards?: ContentHash[];
  /** The record came from the sync server (a pull): kept out of this workstation's outbox. */
  pulled?: boolean;
  /**
   * Append to the path's history without making it the current version (a pulled version the
   * server had already superseded when it was read). No precondition applies.
   */
  historyOnly?: boolean;
  /**
   * Refuse the record (PATH_CONFLICT) if a directory is at its path or a file is above it, judged
   * where commits are serialized: a check made before the commit could pass for two writes at once
   * (`a` and `a/b`) and leave a file and a directory at one path. Set for writes through the API;
   * the mount and the watcher mirror a real tree, where that cannot happen.
   */
  checkPath?: boolean;
  /**
   * The record's content, when the content store lets the repository keep it
   * (ContentStore.contentWithRecordMaxBytes): stored in the commit's transaction, before the record,
   * and kept even if the record is refused (garbage for gc, as any content stored before a refused
   * commit). A repository the store did not name must refuse a commit that carries it.
   */
  content?: Uint8Array;
}

/** A change in sync's feed: the record, and whether it was its path's newest record when read. */
export type SyncChange = VersionRecord & { current: boolean };

/** A version in a workstation's outbox (migration 8). */
export interface OutboxItem {
  seq: number;
  record: VersionRecord;
  /** the path's version this one replaced when committed (null: the path did not exist) */
  baseVersionId: string | null;
  /** from the server: not to be pushed */
  pulled: boolean;
}

export type VersionCommitResult =
  | { ok: true; entry: Entry | null }
  | { ok: false; code: 'STALE_BASE_VERSION'; currentVersionId: string | null }
  | { ok: false; code: 'PATH_CONFLICT'; conflict: WriteConflict };

export interface HistoryQuery {
  /** one path's history; omitted = the whole project's */
  path?: string;
  cursor?: string;
  limit: number;
}

export interface PruneResult {
  prunedVersions: number;
  /** the pruned versions' sizes, summed (content other versions share stays stored) */
  prunedBytes: number;
  /** hashes that lost a reference; the GC decides whether anything still references them */
  releasedHashes: ContentHash[];
}

/** What a prune would delete (retention's dry run): counts and sizes of the versions, and the paths with the most. */
export interface PrunePreview {
  versions: number;
  bytes: number;
  /** how many paths have versions to prune */
  pathCount: number;
  /** the paths with the most bytes to prune, most first */
  paths: Array<{ path: string; versions: number; bytes: number }>;
}

export interface VersionCommitOptions {
  atomic?: boolean;
  /**
   * Not with `atomic`. Called at most once, when the commits' projects are locked for this
   * transaction and before anything is read: commits submitted since, for those projects only, which
   * then commit after `commits` in the same transaction, their results following in order. A
   * repository whose writers wait for a lock shared by several processes (Postgres: every replica)
   * calls it, so that a batch formed before a wait takes in what queued up during it; one that
   * serializes commits in process need not.
   */
  latecomers?: (projects: ReadonlySet<string>) => VersionCommit[];
}

export interface VersionRepository {
  /**
   * Commit records in one transaction, in order: each record is appended to history and sets (or,
   * for a tombstone, removes) its path's current entry. Records whose precondition fails are
   * skipped and reported; the others commit. Results are in input order.
   * With `{ atomic: true }` (rename, snapshot restore) it is all or nothing: if any precondition
   * fails, nothing commits and every record reports the failure (ok: false) of its own path
   * or, for records whose own precondition held, `{ ok: false, code: 'STALE_BASE_VERSION',
   * currentVersionId }` with the path's current id as well.
   */
  commit(commits: VersionCommit[], options?: VersionCommitOptions): Promise<VersionCommitResult[]>;
  get(projectId: string, versionId: string): Promise<VersionRecord | null>;
  /**
   * The project's version ids whose canonical text starts (`prefix`) or ends (`suffix`) with the
   * given dashed lowercase text, in id order, at most `limit` (short ids, engine/short-ids.ts).
   */
  matchIds(projectId: string, abbreviation: IdAbbreviation, limit: number): Promise<string[]>;
  /**
   * Where the version was renamed from, if it was made by a rename: a rename (engine renameFile, which
   * both daemon modes use) commits a tombstone at the old path and, right after it in the project's
   * commit order, a write of the same content by the same actor at the new one. Returns that
   * tombstone and the old path's version it ended, or null (also when retention pruned either).
   */
  renameSource(projectId: string, versionId: string): Promise<{ tombstone: VersionRecord; source: VersionRecord } | null>;
  /** newest first */
  history(projectId: string, query: HistoryQuery): Promise<Page<VersionRecord>>;
  getEntry(projectId: string, path: string): Promise<Entry | null>;
  /** Entries whose path starts with `prefix` ('' = all), in path order. */
  listEntries(projectId: string, options: { prefix: string; cursor?: string; limit: number }): Promise<Page<Entry>>;
  /**
   * The entries as they were at `at` (an ISO timestamp): for each path below `prefix`, its newest
   * version with a timestamp at or before `at` (ties: the later recorded), unless that is a deletion.
   * In path order, by pages of at most `limit` paths examined (a page may hold fewer entries when
   * some paths were deleted then; `nextCursor` says whether more follow).
   */
  entriesAt(projectId: string, options: { prefix: string; at: string; cursor?: string; limit: number }): Promise<Page<Entry>>;
  /** true if any entry lives strictly below `dirPath/` */
  isDirectory(projectId: string, dirPath: string): Promise<boolean>;
  /**
   * Why a file cannot be written at `path`, or null if it can: entries live below it (it is a
   * directory), or one of its ancestors is a file. One call for the check every write makes.
   */
  writeConflict(projectId: string, path: string): Promise<WriteConflict | null>;
  /**
   * Retention: for each path (all paths of the project if `paths` is omitted) keep the newest
   * `keep` versions; older ones are deleted unless pinned by a snapshot or current.
   */
  prune(projectId: string, options: { keep: number; paths?: string[]; holdAfterSeq?: number }): Promise<PruneResult>;
  /** What prune(projectId, { keep, holdAfterSeq }) would delete now, deleting nothing; `top` paths listed. */
  previewPrune(projectId: string, options: { keep: number; holdAfterSeq?: number; top: number }): Promise<PrunePreview>;
  /** Of the given hashes, those still referenced by any version record or snapshot pin. */
  referencedHashes(hashes: ContentHash[]): Promise<Set<ContentHash>>;
  /** Every hash referenced by any version record (for fsck and gc), streamed. */
  allReferencedHashes(): AsyncIterable<ContentHash>;
  /**
   * The hashes one project's version records reference, dataset shards and content uploaded to it
   * (sync) included (an organization's fsck), streamed. A hash may come more than once.
   */
  projectReferencedHashes(projectId: string): AsyncIterable<ContentHash>;
  countVersions(projectId: string): Promise<number>;
  /**
   * Of `hashes`, those the project can not count on yet: neither referenced by its version records
   * (dataset shards included) nor uploaded to it (recordUpload). Never whether the shared store has
   * them: that would tell a client about other projects' files.
   */
  unavailableObjects(projectId: string, hashes: ContentHash[]): Promise<ContentHash[]>;
  /** The object, now in the store, was uploaded to the project (sync). */
  recordUpload(projectId: string, upload: { contentHash: ContentHash; size: number; at: string }): Promise<void>;
  /** The same for many objects, in one transaction. */
  recordUploads(projectId: string, uploads: Array<{ contentHash: ContentHash; size: number; at: string }>): Promise<void>;
  /** Whether any project has a version with this id (ids a workstation made are checked before use). */
  versionIdInUse(versionId: string): Promise<boolean>;
  /** Of these version ids, those the project has (a pulling workstation skips its own versions, read back). */
  knownVersionIds(projectId: string, versionIds: string[]): Promise<Set<string>>;
  /**
   * The project's version records committed after position `afterSeq` (0: from the first), oldest
   * first, with the position of the last one (sync's change feed; positions only grow).
   */
  changesAfter(projectId: string, afterSeq: number, limit: number): Promise<{ items: SyncChange[]; lastSeq: number | null }>;
  /** The workstation's side: its versions after `afterSeq`, oldest first, with base and origin. */
  outboxAfter(projectId: string, afterSeq: number, limit: number): Promise<{ items: OutboxItem[]; lastSeq: number | null }>;
  /** The path's newest version record (history-only ones included), with its position and origin. */
  pathHead(projectId: string, path: string): Promise<{ seq: number; versionId: string; pulled: boolean } | null>;
  /** What is still to push after `afterSeq`: versions made here (not pulled), their bytes, the oldest time. */
  outboxStats(projectId: string, afterSeq: number): Promise<{ count: number; bytes: number; oldest: string | null }>;
}

export type WriteConflict = { kind: 'directory' } | { kind: 'file-ancestor'; ancestor: string };

export interface SnapshotCreate {
  snapshotId: string;
  projectId: string;
  message: string;
  actor: Snapshot['actor'];
  timestamp: string;
  git?: Snapshot['git'];
}

/** One commit of a received history: its records, then its snapshot and that snapshot's tags. */
export interface ImportStep {
  commits: VersionCommit[];
  snapshot: SnapshotCreate;
  tags: string[];
}

export interface ParentChange {
  path: string;
  /** the snapshot's pin of the path; null when the path is gone */
  after: SnapshotEntry | null;
}

export interface SnapshotRestorePlanItem {
  path: string;
  /** current entry, null if the path does not exist now */
  current: Entry | null;
  /** what the snapshot pins for this path, null if the snapshot does not have it */
  pinned: SnapshotEntry | null;
}

export interface SnapshotRepository {
  /**
   * Atomically pins every current entry of the project; parent = the previous tip, seq = tip + 1.
   * A write that commits concurrently is either wholly in the snapshot or wholly after it.
   */
  create(snapshot: SnapshotCreate): Promise<Snapshot>;
  get(projectId: string, snapshotId: string): Promise<Snapshot | null>;
  /** The project's snapshot ids abbreviated by `abbreviation`, as VersionRepository.matchIds. */
  matchIds(projectId: string, abbreviation: IdAbbreviation, limit: number): Promise<string[]>;
  /** newest first */
  list(projectId: string, options: { cursor?: string; limit: number }): Promise<Page<Snapshot>>;
  tip(projectId: string): Promise<Snapshot | null>;
  entries(snapshotId: string, options: { prefix?: string; cursor?: string; limit: number }): Promise<Page<SnapshotEntry>>;
  /** `to` null = the current tree. Paths in path order. */
  diff(projectId: string, from: string, to: string | null): Promise<DiffItem[]>;
  /**
   * For each snapshot: the paths whose pinned version differs from the parent snapshot's, with the new pin (null: gone),
   * from the change set recorded when the snapshot was taken — cheap: proportional to the changes, not
   * the tree. A listed path may hold equal content under a new version (diff() would omit it). Null
   * when none was recorded (snapshots older than the record, the first of a chain): use diff() then.
   * One result per requested snapshot, in order (many at once: a chain walk asks for all of them).
   */
  changesFromParents(projectId: string, snapshotIds: string[]): Promise<Array<ParentChange[] | null>>;
  /** The paths whose current state differs from the snapshot (the only ones a restore touches). */
  restorePlan(projectId: string, snapshotId: string): Promise<SnapshotRestorePlanItem[]>;
  /**
   * A received history (git push), all or nothing: each step commits its version records — every
   * precondition checked, as commit(…, { atomic: true }) does — then takes its snapshot and adds its
   * tags. The steps were planned on the chain ending at `expectedTip` (a snapshot id; null: no
   * snapshot yet): if the tip is another when the chain is applied (the same push, applied meanwhile
   * through another request or replica, would otherwise pass every record's precondition, since its
   * records were read after it), that throws STALE_BASE_VERSION too. A failed precondition throws
   * STALE_BASE_VERSION, a taken tag TAG_TAKEN, and then no step is applied. Returns the snapshots,
   * in order.
   */
  importChain(projectId: string, steps: ImportStep[], expectedTip: string | null): Promise<Snapshot[]>;
  /**
   * A snapshot of exactly these pins (sync: the tree a workstation had when it took it), appended to
   * the chain: parent = tip, seq = tip + 1. Pins whose version is not a live version of the project
   * are left out and their paths returned — or, with `requireAll`, nothing is created and
   * SNAPSHOT_PINS_MISSING names them. It records no change set: diff() serves it and its child.
   */
  createPinned(
    snapshot: SnapshotCreate,
    pins: Array<{ path: string; versionId: string }>,
    options?: { requireAll?: boolean },
  ): Promise<{ snapshot: Snapshot; missing: string[] }>;
  /** The chain after `afterSeq`, oldest first (sync's snapshot feed). */
  listAfter(projectId: string, afterSeq: number, limit: number): Promise<Snapshot[]>;
  /** Throws TAG_TAKEN if the tag exists in the project. */
  addTag(projectId: string, snapshotId: string, tag: string): Promise<void>;
  /** false if there was no such tag */
  removeTag(projectId: string, tag: string): Promise<boolean>;
  listTags(projectId: string): Promise<Array<{ tag: string; snapshotId: string }>>;
  /** snapshot by tag */
  resolveTag(projectId: string, tag: string): Promise<Snapshot | null>;
}

export interface AccessRepository {
  createOrganization(org: Organization): Promise<void>;
  getOrganization(orgId: string): Promise<Organization | null>;
  listOrganizations(): Promise<Organization[]>;

  createIdentity(identity: Identity): Promise<void>;
  getIdentity(identityId: string): Promise<Identity | null>;

  setOrgRole(membership: OrgMembership): Promise<void>;
  removeOrgMember(orgId: string, identityId: string): Promise<void>;
  getOrgRole(orgId: string, identityId: string): Promise<OrgRole | null>;
  listOrgMembers(orgId: string): Promise<OrgMembership[]>;
  listOrgsOf(identityId: string): Promise<OrgMembership[]>;

  setProjectAccess(membership: ProjectMembership): Promise<void>;
  removeProjectMember(projectId: string, identityId: string): Promise<void>;
  getProjectAccess(projectId: string, identityId: string): Promise<ProjectAccess | null>;
  listProjectMembers(projectId: string): Promise<ProjectMembership[]>;
  /** every project membership row of one identity */
  listProjectMembershipsOf(identityId: string): Promise<ProjectMembership[]>;

  /** the identity an OIDC `(issuer, subject)` maps to, or null before its first sign-in */
  findLinkedIdentity(issuer: string, subject: string): Promise<string | null>;
  getPreferences(identityId: string): Promise<Record<string, unknown>>;

  getSsoConnection(connectionId: string): Promise<SsoConnection | null>;
  listSsoConnections(orgId: string): Promise<SsoConnection[]>;
  /** the active connection with `domain` verified, or null */
  findSsoConnectionForDomain(domain: string): Promise<SsoConnection | null>;
  /** the active connection whose issuer is exactly `issuer`, or null */
  findActiveSsoConnection(issuer: string): Promise<SsoConnection | null>;

  getWebSession(sessionHmac: string): Promise<WebSession | null>;

  getScimConfig(orgId: string): Promise<ScimConfig | null>;
  getScimConfigByToken(tokenId: string): Promise<ScimConfig | null>;
  getScimUser(orgId: string, identityId: string): Promise<ScimUser | null>;
  /** userName compares case-insensitively (RFC 7643 §4.1.1) */
  findScimUserByUserName(orgId: string, userName: string): Promise<ScimUser | null>;
  listScimUsers(orgId: string): Promise<ScimUser[]>;
  getScimGroup(orgId: string, groupId: string): Promise<ScimGroup | null>;
  listScimGroups(orgId: string): Promise<ScimGroup[]>;
  /** the groups of the organization `identityId` is a member of */
  listScimGroupsOf(orgId: string, identityId: string): Promise<ScimGroup[]>;

  createApiKey(key: ApiKeyRecord): Promise<void>;
  getApiKey(keyId: string): Promise<ApiKeyRecord | null>;
  listApiKeys(orgId: string): Promise<ApiKeyRecord[]>;
  updateApiKey(keyId: string, patch: Partial<Omit<ApiKeyRecord, 'keyId'>>): Promise<void>;
  /** cheap, called on every authenticated request; may be coalesced by the implementation */
  touchApiKey(keyId: string, at: string): Promise<void>;

  appendAudit(record: AuditRecord): Promise<void>;
  listAudit(orgId: string, options: { cursor?: string; limit: number }): Promise<Page<AuditRecord>>;

  /**
   * Applies the changes in order in ONE transaction: all of them or none. Access changes come in
   * groups (a key's service identity, its role, its narrowing, the key and the audit record), and a
   * crash or a failed guard between two separate calls would leave an orphan identity or an unaudited
   * change. Guards (`kind: 'require…'`) are checked inside the transaction, where no concurrent
   * request can change what they read; a failing guard throws its coded error and nothing is written.
   */
  applyAccessChanges(changes: readonly AccessChange[]): Promise<void>;
}

export type AccessChange =
  | { kind: 'createOrganization'; org: Organization }
  | { kind: 'createIdentity'; identity: Identity }
  | { kind: 'setOrgRole'; membership: OrgMembership }
  | { kind: 'removeOrgMember'; orgId: string; identityId: string }
  | { kind: 'setProjectAccess'; membership: ProjectMembership }
  | { kind: 'removeProjectMember'; projectId: string; identityId: string }
  | { kind: 'createApiKey'; key: ApiKeyRecord }
  | { kind: 'updateApiKey'; keyId: string; patch: Partial<Omit<ApiKeyRecord, 'keyId'>> }
  | { kind: 'appendAudit'; record: AuditRecord }
  /** IDENTITY_LINK_TAKEN if `(issuer, subject)` already maps to an identity (a concurrent first sign-in) */
  | { kind: 'linkIdentity'; link: IdentityLink }
  | { kind: 'setPreferences'; identityId: string; preferences: Record<string, unknown> }
  /** creates or replaces the connection and its domains */
  | { kind: 'putSsoConnection'; connection: SsoConnection }
  /** SSO_DOMAIN_TAKEN if another connection has `domain` verified */
  | { kind: 'requireDomainUnclaimed'; domain: string; connectionId: string }
  /** SSO_ISSUER_TAKEN if another active connection has this issuer */
  | { kind: 'requireIssuerUnclaimed'; issuer: string; connectionId: string }
  /** the name and email shown for an identity (a directory renamed the person) */
  | { kind: 'setIdentityProfile'; identityId: string; name: string; email: string | null }
  | { kind: 'createWebSession'; session: WebSession }
  /** revokes one session (by its HMAC), every session of an identity, or every session an organization's SSO opened */
  | { kind: 'revokeWebSessions'; at: string; sessionHmac?: string; identityId?: string; orgId?: string }
  | { kind: 'putScimConfig'; config: ScimConfig }
  /** SCIM_USERNAME_TAKEN if another user of the organization has this userName (any case) */
  | { kind: 'putScimUser'; user: ScimUser }
  | { kind: 'deleteScimUser'; orgId: string; identityId: string }
  /** SCIM_GROUP_NAME_TAKEN if another group of the organization has this displayName */
  | { kind: 'putScimGroup'; group: ScimGroup }
  | { kind: 'deleteScimGroup'; orgId: string; groupId: string }
  /** SCIM_VERSION_MISMATCH unless the stored resource still has `version` (a concurrent change won) */
  | { kind: 'requireScimVersion'; orgId: string; resource: 'user' | 'group'; id: string; version: number }
  /** MEMBERSHIP_LAST_OWNER unless the organization has an owner other than `identityId` */
  | { kind: 'requireAnotherOwner'; orgId: string; identityId: string }
  /** KEY_NOT_FOUND if missing, KEY_REVOKED if revoked, KEY_ROTATED if replaced (unless `allowReplaced`) */
  | { kind: 'requireKeyActive'; keyId: string; allowReplaced?: boolean }
  /** ALREADY_BOOTSTRAPPED if any organization exists */
  | { kind: 'requireNoOrganization' };
