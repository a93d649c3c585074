import type { AdoptOutcome, OutboxItem, PulledVersion } from './commands/sync-adopt.js';
import type { ChangesPage } from './commands/sync-feed.js';
import type { SyncedOutcome, SyncedVersion } from './commands/sync-versions.js';
import type { Readable } from 'node:stream';
import type { FileHandle } from 'node:fs/promises';
import type { RenameInfo } from './commands/history.js';
import type { ReadFileResult } from './commands/read-file.js';
import type { RetentionChange, RetentionPreview } from './commands/retention.js';
import type { ComposedObject } from './commands/sync-objects.js';
import type { VersionDiff } from './commands/diff-versions.js';
import type { SyncedSnapshot, SyncedSnapshotOutcome } from './commands/sync-snapshots.js';
import type { DatasetManifest } from './datasets/manifest.js';
import type { ContentStore, ReadRange } from './ports/content-store.js';
import type { MetadataRepository } from './ports/metadata-repository.js';
import type { Clock, IdGenerator } from './ports/world.js';
import type {
  Actor,
  ContentHash,
  DiffItem,
  Entry,
  Page,
  Project,
  RetentionSetting,
  Snapshot,
  SnapshotEntry,
  VersionRecord,
  VersioningPolicy,
  DatasetRules,
} from './types.js';

export interface EngineDeps {
  store: ContentStore;
  repository: MetadataRepository;
  clock: Clock;
  ids: IdGenerator;
  /** Objects younger than this are never garbage-collected (protects writes in flight on other hosts). */
  gcGraceMs?: number;
  /** Defaults for new projects. */
  defaultPolicy?: Partial<VersioningPolicy>;
}

export interface WriteInput {
  projectId: string;
  /**
   * The project's record as the caller has just read it (the API reads it to authorize the request):
   * the engine then does not read it again. Must be the record of `projectId`.
   */
  project?: Project;
  path: string;
  actor: Actor;
  /**
   * the bytes, streamed into the store; `{ file }` ingests a local file (read off the event loop).
   * `adopt: true` lets a store that can (ContentStore.adoptFile) move the file in instead of copying it;
   * a store without adoptFile copies it, so afterwards the caller removes the file if it still exists.
   * `knownHash` (with adopt) is the caller's hash of exactly those bytes, trusted by the store.
   * `handle`: the file already open for reading (the caller closes it), read instead of opening it again.
   */
  content: AsyncIterable<Uint8Array> | Uint8Array | { file: string; adopt?: boolean; knownHash?: ContentHash; size?: number; handle?: FileHandle };
  /**
   * The content's size when the caller knows it before the bytes arrive (a file's stat, an upload's
   * Content-Length; `size` in a file input means the same). It decides early whether a large file is
   * stored as a dataset, which then costs no full copy.
   */
  sizeHint?: number;
  /** optimistic concurrency: the version the writer based its change on (null = must not exist) */
  baseVersionId?: string | null;
  maxBytes?: number;
  onProgress?: (bytes: number) => void;
  kind?: 'write' | 'import';
  /** the exec bit (default false); the same content with a different bit is a new version */
  executable?: boolean;
  /**
   * A symbolic link (default false): `content` is the link's target, the bytes readlink(2) returns
   * (1 to 4,095 bytes, no NUL: else INVALID_SYMLINK_TARGET). Stored as an ordinary object, never as a
   * dataset, never executable (`executable` is ignored). A link and a file with the same bytes are
   * different states: either replacing the other is a new version.
   */
  symlink?: boolean;
  /**
   * Record nothing when the content hash, exec bit and symlink flag equal the path's current entry
   * (the daemon's "touch is not a version"): the result is then the current entry and version,
   * `unchanged: true`.
   */
  ifChanged?: boolean;
}

export interface WriteResult {
  entry: Entry;
  version: VersionRecord;
  /** set (true) only when `ifChanged` skipped the write */
  unchanged?: boolean;
  /**
   * false when the size policy keeps only this path's current content (over the threshold, extension
   * not allowlisted: its older versions are pruned, docs/design.md §2); set on every write that recorded a version
   */
  historyKept?: boolean;
}

export interface GitReceiveResult {
  /** snapshots created, oldest first */
  applied: Array<{ snapshotId: string; commitId: string }>;
  /** pushed commits the project had already */
  alreadyPresent: number;
  head: { snapshotId: string; commitId: string } | null;
}

export interface GitRefs {
  ref: 'refs/heads/main';
  head: { snapshotId: string; seq: number; commitId: string } | null;
  tags: Array<{ tag: string; snapshotId: string; commitId: string }>;
}

export interface DatasetInfo {
  version: VersionRecord;
  manifestHash: ContentHash;
  manifest: DatasetManifest;
}

export interface DatasetVersionInfo {
  version: VersionRecord;
  /** shards in the manifest (null: not a dataset version) */
  shardCount: number | null;
  distinctShards: number | null;
  /** shards not in the next older dataset version on this page (null for the oldest one) */
  newShards: number | null;
  /** bytes of those new shards: what this version added to the store (null as newShards) */
  newBytes: number | null;
}

export interface DirectoryListing {
  path: string;
  /** a file's `symlink`: true when it is a symbolic link (its content is the target) */
  items: Array<{ name: string; path: string; type: 'file' | 'directory'; size?: number; versionId?: string; timestamp?: string; symlink?: boolean }>;
}

export interface SnapshotRestoreResult {
  snapshot: Snapshot;
  /** number of paths the restore changed */
  changed: number;
  versions: VersionRecord[];
}

export interface FsckReport {
  /** 'store': every reference and every stored object; 'projects': only what the given projects reference */
  scope: 'store' | 'projects';
  objectsChecked: number;
  referencesChecked: number;
  missing: Array<{ hash: ContentHash; referencedBy?: string }>;
  corrupt: ContentHash[];
  ok: boolean;
}

export interface GcReport {
  objectsScanned: number;
  objectsDeleted: number;
  /** the content bytes of the deleted objects */
  bytesFreed: number;
  /** unreferenced objects kept because they are younger than the grace period, and their bytes */
  objectsKept: number;
  bytesKept: number;
  graceMs: number;
}

/** The engine's public operations; hosts (control API, daemon, CLI in-process) call only these. */
export interface Engine {
  createProject(input: { orgId: string; name: string; policy?: Partial<VersioningPolicy> }): Promise<Project>;
  getProject(projectId: string): Promise<Project>;
  listProjects(orgId: string): Promise<Project[]>;

  writeFile(input: WriteInput): Promise<WriteResult>;
  /** Streams the current content (or a version's). PATH_NOT_FOUND if deleted/absent. */
  /** `path`, `versionId` or both (then the version must be of that path). `range` reads part of it. */
  readFile(input: { projectId: string; path?: string; versionId?: string; range?: ReadRange }): Promise<ReadFileResult>;
  /**
   * A version's content into a new file `target` (must not exist), durable when this resolves; copied
   * and checked off the event loop where the store can (commands/write-version-file.ts).
   */
  writeVersionFile(input: { projectId: string; versionId: string; target: string; mode: number }): Promise<{ size: number }>;
  deleteFile(input: { projectId: string; path: string; actor: Actor; baseVersionId?: string | null }): Promise<{ version: VersionRecord }>;
  renameFile(input: { projectId: string; from: string; to: string; actor: Actor; overwrite?: boolean }): Promise<{ deleted: VersionRecord; created: WriteResult }>;
  /** Several renames (overwriting) in one atomic commit: all or none (commands/rename-file.ts renameFiles). */
  renameFiles(input: { projectId: string; pairs: Array<{ from: string; to: string }>; actor: Actor }): Promise<Array<{ deleted: VersionRecord; created: WriteResult }>>;
  /** Immediate children of a directory, now or (`at`, an ISO time) as they were then. */
  listDirectory(input: { projectId: string; path: string; at?: string }): Promise<DirectoryListing>;
  /**
   * Files the project has now, below `prefix` (a directory, '' for all), in path order a page at a
   * time: a whole tree compared without holding it (listDirectory reads every path below a directory
   * to find its subdirectories, per directory).
   */
  listFiles(input: { projectId: string; prefix?: string; cursor?: string; limit?: number }): Promise<Page<Entry>>;
  /** Files the project has now (deleted paths excluded). */
  countFiles(projectId: string): Promise<number>;
  stat(input: { projectId: string; path: string }): Promise<Entry | null>;

  history(input: { projectId: string; path?: string; cursor?: string; limit?: number }): Promise<Page<VersionRecord>>;
  getVersion(projectId: string, versionId: string): Promise<VersionRecord>;
  restoreVersion(input: { projectId: string; versionId: string; actor: Actor }): Promise<WriteResult>;
  /** Two versions compared line by line, with `context` (3) unchanged lines around each change. */
  diffVersions(input: { projectId: string; a: string; b: string; context?: number }): Promise<VersionDiff>;
  /** the version, and the rename that made it (null: not made by a rename) */
  renameOf(projectId: string, versionId: string): Promise<RenameInfo>;

  createSnapshot(input: { projectId: string; message?: string; actor: Actor }): Promise<Snapshot>;
  listSnapshots(input: { projectId: string; cursor?: string; limit?: number }): Promise<Page<Snapshot>>;
  /** by id or by tag */
  getSnapshot(projectId: string, snapshotIdOrTag: string): Promise<Snapshot>;
  snapshotEntries(input: { projectId: string; snapshotId: string; prefix?: string; cursor?: string; limit?: number }): Promise<Page<SnapshotEntry>>;
  /** `to` omitted = against the current tree */
  diffSnapshots(input: { projectId: string; from: string; to?: string }): Promise<DiffItem[]>;
  restoreSnapshot(input: { projectId: string; snapshotId: string; actor: Actor }): Promise<SnapshotRestoreResult>;
  addTag(input: { projectId: string; snapshotId: string; tag: string; actor: Actor }): Promise<{ tag: string; snapshotId: string }>;
  listTags(projectId: string): Promise<Array<{ tag: string; snapshotId: string }>>;
  removeTag(input: { projectId: string; tag: string; actor: Actor }): Promise<void>;

  getRetention(projectId: string): Promise<RetentionSetting>;
  /** sets it and prunes to it at once, saying how much it pruned */
  setRetention(input: { projectId: string; maxVersions: number; actor: Actor }): Promise<RetentionChange>;
  /** what setRetention would prune now (versions, bytes, the paths with most), changing nothing */
  previewRetention(input: { projectId: string; maxVersions: number }): Promise<RetentionPreview>;
  updatePolicy(input: { projectId: string; policy: Partial<VersioningPolicy> }): Promise<Project>;

  /** The snapshot chain up to `snapshotId` as a git fast-import stream (docs/design.md §5). */
  gitExport(input: { projectId: string; snapshotId: string }): Promise<AsyncIterable<Uint8Array>>;
  /** The chain's tip and tags with their git commit ids. */
  gitRefs(projectId: string): Promise<GitRefs>;
  /** The whole chain as fast-import, or only what follows `haveCommitId` (GIT_UNKNOWN_COMMIT if not in the chain). */
  gitUpload(input: { projectId: string; haveCommitId?: string }): Promise<AsyncIterable<Uint8Array>>;
  /** A pushed `git fast-export` stream of a linear history that fast-forwards the chain becomes snapshots. */
  gitReceive(input: { projectId: string; actor: Actor; stream: AsyncIterable<Uint8Array> }): Promise<GitReceiveResult>;

  getDatasetRules(projectId: string): Promise<DatasetRules>;
  trackDataset(input: { projectId: string; pattern: string; actor: Actor }): Promise<{ rules: DatasetRules; converted: VersionRecord[] }>;
  untrackDataset(input: { projectId: string; pattern: string }): Promise<DatasetRules>;
  setDatasetThreshold(input: { projectId: string; thresholdBytes: number }): Promise<DatasetRules>;
  listDatasets(projectId: string): Promise<Entry[]>;
  getDatasetManifest(input: { projectId: string; path?: string; versionId?: string }): Promise<DatasetInfo>;
  datasetHistory(input: { projectId: string; path: string; cursor?: string; limit?: number }): Promise<Page<DatasetVersionInfo>>;

  /** Full garbage collection: deletes objects nothing references (older than the grace period). */
  gc(options?: { graceMs?: number }): Promise<GcReport>;
  /** Resolves once background work started so far (retention pruning, collection) is done. */
  settle(): Promise<void>;
  /** `projectIds`: check and report only what those projects reference (an organization's fsck). */
  fsck(options?: { projectIds?: string[]; onProgress?: (done: number) => void }): Promise<FsckReport>;
  /** Of these content hashes (at most 1,000), those the project neither references nor was sent (sync). */
  missingObjects(input: { projectId: string; hashes: string[] }): Promise<ContentHash[]>;
  /** Stores content sent as `hash` for the project, verified: CONTENT_HASH_MISMATCH keeps nothing. */
  putObject(input: { projectId: string; hash: string; content: AsyncIterable<Uint8Array>; maxBytes?: number }): Promise<{ contentHash: ContentHash; size: number; created: boolean }>;
  /** Many small contents at once, each verified against its hash (sync's batch upload). */
  putObjects(input: { projectId: string; objects: Array<{ hash: string; data: Uint8Array }> }): Promise<{ stored: number; bytes: number }>;
  /** One content the project has (references or was sent), streamed and verified; CONTENT_NOT_FOUND otherwise. */
  openObject(input: { projectId: string; hash: string }): Promise<{ stream: Readable; size: number }>;
  /** Contents the project has, by hash, checked as openObject checks one (CONTENT_NOT_FOUND, BATCH_TOO_LARGE): their sizes, to stream one by one. */
  objectsToRead(input: { projectId: string; hashes: string[] }): Promise<Array<{ hash: ContentHash; size: number }>>;
  /** Objects rebuilt from content the project has plus new bytes (sync's delta upload), each verified. */
  composeObjects(input: { projectId: string; objects: ComposedObject[]; literal: Uint8Array }): Promise<{ stored: number; bytes: number; literalBytes: number }>;
  /** Of these version ids (at most 1,000), those the project already has (a pull skips its own, read back). */
  syncKnownVersions(input: { projectId: string; versionIds: string[] }): Promise<Set<string>>;
  /** A snapshot taken elsewhere (sync): appended to the chain with exactly its pins; idempotent by id. */
  recordSyncedSnapshot(input: { projectId: string; actor: Actor; snapshot: SyncedSnapshot }): Promise<SyncedSnapshotOutcome>;
  /** The snapshot chain after `afterSeq`, oldest first (at most 1,000). */
  snapshotFeed(input: { projectId: string; afterSeq: number; limit: number }): Promise<{ items: Snapshot[]; more: boolean }>;
  /** A dataset's assembled bytes, cut into the shards its (already sent) manifest lists; what arrived whole counts even on failure. */
  putDatasetContent(input: { projectId: string; manifestHash: string; content: AsyncIterable<Uint8Array>; maxBytes?: number }): Promise<{ size: number; shards: number; newShards: number }>;
  /**
   * Versions a workstation made, applied in order with their own ids and timestamps (sync/versions):
   * a known id is a duplicate; a path that moved on since the version's base gets a conflict copy
   * (edit against edit), the file back (edit against delete) or keeps the edit (delete against edit).
   */
  applySyncedVersions(input: { projectId: string; actor: Actor; workstation: string; versions: SyncedVersion[] }): Promise<SyncedOutcome[]>;
  /** The project's versions in commit order after `cursor` (sync's change feed; '' or none: from the first). */
  syncChanges(input: { projectId: string; cursor?: string; limit?: number }): Promise<ChangesPage>;
  /** A workstation's outbox: its versions after `afterSeq` in commit order, each with the version it replaced. */
  syncOutbox(input: { projectId: string; afterSeq: number; limit: number }): Promise<{ items: OutboxItem[]; lastSeq: number | null }>;
  /** The position of the project's newest version record (0: none): syncOutbox after it shows what comes next. */
  feedPosition(projectId: string): Promise<number>;
  /** What is left to push after `afterSeq`. */
  syncOutboxStats(input: { projectId: string; afterSeq: number }): Promise<{ count: number; bytes: number; oldest: string | null }>;
  /** Sync's retention hold: versions made here after `afterSeq` (not on the server yet) are never pruned (null: none). */
  holdRetention(projectId: string, afterSeq: number | null): void;
  /**
   * Versions pulled from the server, recorded here with their own ids (sync-adopt.ts); stops at the
   * first deferred one. `refused`: versions made here that the server refused (never made way for).
   */
  adoptSyncedVersions(input: {
    projectId: string;
    pushedSeq: number;
    versions: PulledVersion[];
    refused?: readonly string[];
    /** whether this directory on disk may give way to the server's file there (watch mode: nothing in it the project lacks) */
    mayReplaceDirectory?: (path: string) => Promise<boolean>;
  }): Promise<AdoptOutcome[]>;
  /**
   * Calls `listener` after each operation that may have changed a project's files (write, delete,
   * rename, restores, git push, dataset conversion), success or not: a host that mirrors the files
   * (watch mode) looks at the history then instead of polling it. Returns the unsubscribe.
   */
  onFilesChanged(listener: (projectId: string) => void): () => void;
  /** Waits for in-flight batches, then closes store and repository. */
  close(): Promise<void>;
}

export type { ContentStore, MetadataRepository };
