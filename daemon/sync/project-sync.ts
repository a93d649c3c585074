// One linked project's replication (issue 14): two loops that never block a capture.
//
// Push: the engine's own version records are the outbox (migration 8: each committed with the version
// it replaced, in its own transaction); the loop reads them after the pushed position, asks the
// server which contents it lacks, uploads those (bounded concurrency), then posts the records with
// their ids, bases and times. The position advances only after the server answered, so a crash or a
// cut connection re-sends (the server recognises the ids: exactly once in effect).
//
// Pull: follows the server's change feed (long poll) from its cursor, fetches the bytes this store
// lacks (verified against their hash), and records the versions here with their own ids. A path with
// a change made here that the server has not had yet waits for the push: the server decides
// (conflict copy, edit beats delete) and the feed then brings its decision.
import type { Logger } from 'pino';
import type { AdoptOutcome, PulledVersion } from '../../engine/commands/sync-adopt.js';
import type { SyncedOutcome, SyncedVersion } from '../../engine/commands/sync-versions.js';
import type { ContentStore, Engine } from '../../engine/engine-api.js';
import { isNoRoom } from '../../engine/errors.js';
import type { OutboxItem, SyncChange } from '../../engine/ports/metadata-repository.js';
import type { Actor, ContentHash } from '../../engine/types.js';
import type { DaemonState } from '../state.js';
import type { SyncLink } from './link.js';
import { AliasTable } from './aliases.js';
import { backoffMs, type ChangesPage, Remote, RemoteError } from './remote.js';
import { uploadDataset } from './dataset-upload.js';
import { downloadMissing, uploadMissing } from './transfer.js';
import { uploadAheadWhile } from './upload-ahead.js';
import { type HeldDeletes, type IncomingDeleteGuard, incomingDeleteGuard } from './incoming-guard.js';
import { pullSnapshots, pushSnapshots, type SnapshotSyncDeps } from './snapshot-sync.js';
import { localRetentionChanged, syncRetention } from './retention-sync.js';
import { localTagsChanged, syncTags } from './tag-sync.js';
import { judgeSync, type SyncFacts, type SyncReason } from './sync-verdict.js';
import { UnsyncedPaths } from './unsynced-paths.js';
import { ChangeSetDeletions } from './moves.js';

const PUSH_BATCH = 500;
const PULL_BATCH = 500;
const LONG_POLL_MS = 25_000;
const MAX_CONFLICTS_SHOWN = 50;
/** A busy feed still looks at the server's snapshots and tags this often. */
const CHAIN_PULL_EVERY_MS = 5_000;
/** A page deleting this many files here waits a moment and is judged with what follows it. */
const DELETE_SETTLE_AT = 10;
const DELETE_SETTLE_MS = 1_500;
/** A page the delete guard holds is read again this often (or at once when the user confirms). */
const HELD_RECHECK_MS = 30_000;
/**
 * A server that cannot be reached at all (refused, reset, timed out: no HTTP answer) is tried again
 * at least this often. The exponential backoff reached 36 s after a server's kill -9, and the
 * workstation was back in sync 44 s after the restart; a refused connection costs nothing to retry.
 */
const UNREACHABLE_RETRY_CAP_MS = 3_000;
/** A pull this home's disk had no room for is tried again at least this often (room may come back any time). */
const NO_ROOM_RETRY_CAP_MS = 10_000;


export type SyncState = 'starting' | 'syncing' | 'idle' | 'offline' | 'paused' | 'held' | 'stopped';

export interface SyncConflict {
  /** the conflict copy */
  path: string;
  /** the file it is a copy of */
  of: string;
  at: string;
}

export interface SyncStatus {
  server: string;
  remoteProjectId: string;
  workstation: string;
  state: SyncState;
  /** nothing keeps this workstation and the server's head apart: `reasons` is empty (sync-verdict.ts) */
  inSync: boolean;
  /** why it is not in sync, most pressing first (empty when in sync) */
  reasons: SyncReason[];
  /** the server does not accept this workstation's changes (a viewer's or read-only member's key) */
  readOnly: boolean;
  queue: { versions: number; bytes: number; oldestAt: string | null; oldestAgeSeconds: number | null };
  pushed: number;
  pulled: number;
  /** snapshots sent to the server's chain, and taken from it, since the daemon started */
  snapshotsPushed: number;
  snapshotsPulled: number;
  uploadedBytes: number;
  downloadedBytes: number;
  /** contents (and dataset manifests and shards) fetched from the server since the daemon started */
  downloadedObjects: number;
  lastPushAt: string | null;
  lastPullAt: string | null;
  lastError: { at: string; message: string; retryAt: string | null } | null;
  /** why sync is paused and what brings it back (`strata init DIR --server URL --project ID` again, `strata login`); null unless paused */
  pausedBecause: string | null;
  conflicts: SyncConflict[];
  /** the server's versions not taken here, by reason (a path not writable here); each path counts once */
  skipped: Record<string, number>;
  /** versions made here that the server refused, by path count (a later version of the path clears one) */
  refused: { count: number; example: string | null; /** the server's cause for the example: its message and code */ reason?: string | null };
  /** the incoming mass-delete guard holds a change set until `strata sync confirm` */
  held: HeldDeletes | null;
}

export interface ProjectSyncDeps {
  engine: Engine;
  store: ContentStore;
  state: DaemonState;
  logger: Logger;
  projectId: string;
  /** who this workstation's own changes are by (tags it takes from the server) */
  actor: Actor;
  link: SyncLink;
  apiKey: string | null;
  /** without an API key: the bearer token of the person signed in to the server (`strata login`) */
  signIn?: () => Promise<string>;
  /** files the project has here (the incoming mass-delete guard's measure) */
  trackedFiles(): number;
  /**
   * The host has looked at the whole directory since it started (watch mode's catch-up scan). Pulling
   * waits for it: an edit made while the daemon was stopped must be recorded (and pushed, where the
   * server decides) before the server's version of that file lands on top of it.
   */
  ready(): boolean;
  /** What the host knows that decides whether this directory is in step with the engine (sync-verdict.ts). */
  hostFacts(): SyncHostFacts;
  /** Watch mode: whether the engine has changes not brought to disk yet (one indexed read). */
  diskBehind?(): Promise<boolean>;
  /** Watch mode: pulled files are written into the directory (so a pulled dataset's bytes are kept for that write: transfer.ts). */
  writesFiles?: boolean;
  /** Whether the host's directory at `path` may give way to the server's file there (ProjectHost.mayReplaceDirectory: nothing in it would be lost or hidden). */
  mayReplaceDirectory?(path: string): Promise<boolean>;
}

/** The host's part of the facts (daemon/project-runner.ts gathers them). */
export type SyncHostFacts = Pick<SyncFacts, 'capturing' | 'notOnDisk' | 'localGuard' | 'unrepresentable'>;

export class ProjectSync {
  readonly #deps: ProjectSyncDeps;
  readonly #remote: Remote | null;
  readonly #log: Logger;
  readonly #stop = new AbortController();
  readonly #aliases: AliasTable;
  readonly #guard: IncomingDeleteGuard;
  #loops: Promise<void>[] = [];
  #pushedSeq: number;
  #pullCursor: string;
  /** the cursor whose deletions were given time to arrive whole */
  #settledAt: string | null = null;
  #pushIdle = false;
  #pulling = false;
  /** whether the server has changes not applied here (null: not known since the last look) */
  #serverAhead: boolean | null = null;
  #diskBehind = false;
  #stoppedLoop: string | null = null;
  readonly #refused: UnsyncedPaths;
  readonly #skippedPaths: UnsyncedPaths;
  /** wakes a loop from its sleep (a backoff, an idle wait): a success of the other loop ends a backoff */
  readonly #wake: { push: (() => void) | null; pull: (() => void) | null } = { push: null, pull: null };
  #paused: string | null = null;
  #readOnly = false;
  #checkAllShards = false;
  #settingsRound: Promise<void> = Promise.resolve();
  #lastChainPull = 0;
  #queueCountedAt = 0;
  #offline = false;
  #pushProgress: Array<() => void> = [];
  #unsubscribe: (() => void) | null = null;
  #stats = {
    pushed: 0,
    pulled: 0,
    snapshotsPushed: 0,
    snapshotsPulled: 0,
    uploadedBytes: 0,
    downloadedBytes: 0,
    downloadedObjects: 0,
    lastPushAt: null as string | null,
    lastPullAt: null as string | null,
  };
  #lastError: SyncStatus['lastError'] = null;
  /** the loop whose failure #lastError is: its next success clears it */
  #lastErrorOf: 'push' | 'pull' | null = null;
  /** the server's contents this home's store had no room for at the last pull (sync's verdict: disk full) */
  #storeFull: { files: number; example: string | null } | null = null;
  #pruning: Promise<void> | null = null;
  #pruneAgain = false;
  #queue: SyncStatus['queue'] = { versions: 0, bytes: 0, oldestAt: null, oldestAgeSeconds: null };
  #conflicts: SyncConflict[];

  constructor(deps: ProjectSyncDeps) {
    this.#deps = deps;
    this.#log = deps.logger.child({ sync: deps.link.server });
    const target = { serverUrl: deps.link.server, remoteProjectId: deps.link.remoteProjectId };
    this.#remote =
      deps.apiKey !== null ? new Remote({ ...target, apiKey: deps.apiKey }) : deps.signIn !== undefined ? new Remote({ ...target, token: deps.signIn }) : null;
    if (this.#remote === null) this.#paused = `no API key for ${deps.link.server}: set STRATA_API_KEY and run \`strata init DIR --server URL --project ID\` again, or \`strata login\``;
    const { flags } = deps.state;
    this.#pushedSeq = flags.get<number>(deps.projectId, 'sync.pushedSeq') ?? 0;
    // From before the host captures anything: what is not on the server yet is never pruned.
    deps.engine.holdRetention(deps.projectId, this.#pushedSeq);
    this.#pullCursor = flags.get<string>(deps.projectId, 'sync.pullCursor') ?? '';
    this.#conflicts = flags.get<SyncConflict[]>(deps.projectId, 'sync.conflicts') ?? [];
    this.#aliases = new AliasTable(deps.state);
    this.#guard = incomingDeleteGuard(deps.state, deps.projectId);
    this.#refused = new UnsyncedPaths(deps.state, deps.projectId, 'refused');
    this.#skippedPaths = new UnsyncedPaths(deps.state, deps.projectId, 'skipped');
  }

  /** Something was versioned here by a path the engine does not announce (a mount's capture thread): push now. */
  wake(): void {
    this.#wake.push?.();
  }

  start(): void {
    this.#unsubscribe = this.#deps.engine.onFilesChanged((changed) => {
      if (changed !== this.#deps.projectId) return;
      this.#wake.push?.();
      if (this.#conflicts.length > 0) this.#pruneConflictsSoon();
    });
    // A copy deleted while the daemon was stopped: the list read back from the flags is checked too.
    if (this.#conflicts.length > 0) this.#pruneConflictsSoon();
    if (this.#remote === null) {
      this.#log.warn(this.#paused);
      return;
    }
    // A loop that fails outside its own error handling stops, loudly; it never takes the daemon (and
    // the project's capture) down with it.
    const stopped = (loop: string) => (error: unknown) => {
      this.#stoppedLoop = loop;
      this.#lastError = { at: new Date().toISOString(), message: `${loop} stopped: ${(error as Error).message}`, retryAt: null };
      this.#log.error({ err: (error as Error).message }, `sync ${loop} stopped; restart the daemon to resume it`);
    };
    this.#loops = [this.#pushLoop(this.#remote).catch(stopped('push')), this.#pullLoop(this.#remote).catch(stopped('pull'))];
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    this.#unsubscribe?.();
    this.#wake.push?.();
    for (const resolve of this.#pushProgress.splice(0)) resolve();
    await Promise.allSettled(this.#loops);
    // Before the engine closes under it.
    await this.#pruning;
  }

  /** The user confirmed the held incoming deletions: apply them. */
  confirmHeld(): void {
    this.#guard.confirm();
    this.#wake.pull?.();
    this.#wake.push?.();
  }

  /**
   * What status shows, brought up to date: the queue's figures and the conflict list. Every status
   * route calls this; `strata status` once read figures counted only when the push loop last went
   * idle (`0 versions queued` while `strata sync status` said 44: never idle while the server is down).
   */
  async refreshStatus(options: { verify?: boolean } = {}): Promise<void> {
    await this.refreshQueue(options.verify === true);
    await this.#pruneConflictsSoon();
    this.#diskBehind = (await this.#deps.diskBehind?.()) ?? false;
    if (options.verify === true) await this.#verifyServerHead();
  }

  /**
   * Asks the server now whether it has changes after this workstation's cursor (`sync wait` does, so
   * its "in sync" is the server's word at that moment, not the last long poll's). A page the pull
   * loop is applying meanwhile moves the cursor: then the loop's own knowledge stands.
   */
  async #verifyServerHead(): Promise<void> {
    if (this.#remote === null || this.#paused !== null) return;
    const cursor = this.#pullCursor;
    try {
      const page = await this.#remote.changes(cursor, { limit: 1, waitMs: 0, signal: this.#stop.signal });
      if (this.#pullCursor === cursor) this.#serverAhead = page.items.length > 0;
      this.#offline = false;
    } catch (error) {
      if (this.#stop.signal.aborted) return;
      this.#serverAhead = null;
      if (error instanceof RemoteError && error.kind === 'retry' && error.status === null) this.#offline = true;
      this.#lastError ??= { at: new Date().toISOString(), message: (error as Error).message, retryAt: null };
    }
  }

  /** The queue's figures, counted at most once a second (a count over a long queue is not free, and status is polled). */
  async refreshQueue(force = false): Promise<void> {
    if (!force && Date.now() - this.#queueCountedAt < 1_000) return;
    this.#queueCountedAt = Date.now();
    const stats = await this.#deps.engine.syncOutboxStats({ projectId: this.#deps.projectId, afterSeq: this.#pushedSeq });
    const oldestAgeSeconds = stats.oldest === null ? null : Math.max(0, Math.round((Date.now() - Date.parse(stats.oldest)) / 1000));
    this.#queue = { versions: stats.count, bytes: stats.bytes, oldestAt: stats.oldest, oldestAgeSeconds };
  }

  /** The facts the verdict is made of, as last gathered (refreshStatus brings the slow ones up to date). */
  #facts(held: HeldDeletes | null): SyncFacts {
    const paused = this.#paused;
    const offline = this.#offline && this.#lastError !== null ? { message: this.#lastError.message, retryAt: this.#lastError.retryAt } : this.#offline ? { message: 'no answer', retryAt: null } : null;
    const host = this.#deps.hostFacts();
    const full = this.#storeFull;
    return {
      ...host,
      // Contents the store could not take are files that cannot be written here either.
      notOnDisk:
        full === null
          ? host.notOnDisk
          : { count: host.notOnDisk.count + full.files, example: host.notOnDisk.example ?? full.example, diskFull: (host.notOnDisk.diskFull ?? 0) + full.files },
      starting: this.#remote !== null && this.#loops.length === 0 && !this.#stop.signal.aborted,
      stoppedLoop: this.#stop.signal.aborted ? 'loops' : this.#stoppedLoop,
      paused,
      offline,
      notPushed: this.#queue.versions,
      readOnly: this.#readOnly,
      serverAhead: this.#serverAhead,
      diskBehind: this.#diskBehind,
      heldIncoming: held === null ? null : { deletes: held.deletes, files: held.files },
      refused: { count: this.#refused.size, example: this.#refused.example, reason: this.#refused.exampleReason },
      skipped: this.#skippedPaths.byReason(),
    };
  }

  status(): SyncStatus {
    const { link } = this.#deps;
    const held = this.#guard.held();
    const verdict = judgeSync(this.#facts(held));
    const queueEmpty = this.#pushIdle || this.#readOnly;
    let state: SyncState;
    if (this.#stop.signal.aborted) state = 'stopped';
    else if (this.#paused !== null) state = 'paused';
    else if (held !== null) state = 'held';
    else if (this.#offline) state = 'offline';
    else if (this.#loops.length === 0) state = 'starting';
    else state = queueEmpty && this.#pulling ? 'idle' : 'syncing';
    return {
      server: link.server,
      remoteProjectId: link.remoteProjectId,
      workstation: link.workstation,
      state,
      inSync: verdict.inSync,
      reasons: verdict.reasons,
      readOnly: this.#readOnly,
      queue: this.#queue,
      ...this.#stats,
      lastError: this.#lastError,
      pausedBecause: state === 'paused' ? this.#paused : null,
      conflicts: this.#conflicts,
      skipped: this.#skippedPaths.byReason(),
      refused: { count: this.#refused.size, example: this.#refused.example, reason: this.#refused.exampleReason },
      held,
    };
  }

  // ---- push ----

  async #pushLoop(remote: Remote): Promise<void> {
    const signal = this.#stop.signal;
    let attempt = 0;
    while (!signal.aborted) {
      try {
        const page = await this.#deps.engine.syncOutbox({ projectId: this.#deps.projectId, afterSeq: this.#pushedSeq, limit: PUSH_BATCH });
        // Snapshots go up once the versions made before them have: up to the oldest one still queued.
        const pending = page.items.find((item) => !item.pulled);
        if (!this.#readOnly && (page.lastSeq === null || pending !== undefined)) {
          this.#stats.snapshotsPushed += await pushSnapshots(this.#snapshotDeps(), remote, { pendingSince: pending?.record.timestamp ?? null, signal });
        }
        if (!this.#readOnly && page.lastSeq === null && ((await localTagsChanged(this.#deps)) || (await localRetentionChanged(this.#deps)))) await this.#syncSettings(remote);
        if (page.lastSeq === null) {
          this.#pushIdle = true;
          this.#recovered('push');
          await this.refreshQueue();
          await this.#sleep(30_000, 'push');
          continue;
        }
        this.#pushIdle = false;
        if (!this.#readOnly) await this.#pushPage(remote, page.items);
        this.#advancePush(page.lastSeq);
        attempt = 0;
        this.#offline = false;
        this.#paused = null;
        this.#recovered('push');
      } catch (error) {
        if (signal.aborted) return;
        attempt++;
        const wait = this.#failed(error, attempt, 'push');
        if (error instanceof RemoteError && error.kind === 'forbidden') {
          // A viewer's or read-only member's workstation: it pulls, never pushes, and says so. What was
          // made here stays queued (a later grant pushes it).
          this.#readOnly = true;
          this.#paused = null;
          this.#log.warn('the server does not accept changes from this workstation (read-only access): pulling only; local changes stay queued');
          await this.refreshQueue();
          await this.#sleep(5 * 60_000, 'push');
          this.#readOnly = false;
          continue;
        }
        await this.#sleep(wait, 'push');
      }
    }
  }

  async #pushPage(remote: Remote, items: OutboxItem[]): Promise<void> {
    const versions: SyncedVersion[] = [];
    const sizes = new Map<ContentHash, number>();
    const datasets = new Map<ContentHash, { versionId: string; baseVersionId: string | null }>();
    for (const { record, baseVersionId, pulled } of items) {
      if (pulled) continue;
      if (record.dataset && record.contentHash !== null) datasets.set(record.contentHash, { versionId: record.versionId, baseVersionId });
      else if (record.contentHash !== null) sizes.set(record.contentHash, record.size);
      versions.push({
        versionId: record.versionId,
        path: record.path,
        baseVersionId: baseVersionId === null ? null : this.#aliases.remoteOf(baseVersionId),
        contentHash: record.contentHash,
        executable: record.executable,
        // Only when set: a server from before links (no `symlink` in its closed schema) still takes files.
        ...(record.symlink ? { symlink: true } : {}),
        ...(record.dataset ? { dataset: true } : {}),
        timestamp: record.timestamp,
      });
    }
    if (versions.length === 0) return;
    const startedAt = Date.now();
    const { engine, store, projectId } = this.#deps;
    this.#stats.uploadedBytes += await uploadMissing(remote, store, sizes, this.#stop.signal);
    const datasetsUp = (async () => {
      for (const [manifestHash, { versionId, baseVersionId }] of datasets) {
        const openAssembled = async () => (await engine.readFile({ projectId, versionId })).stream;
        const base = baseVersionId === null ? null : await engine.getVersion(projectId, baseVersionId).catch(() => null);
        const baseManifestHash = base?.dataset === true ? base.contentHash : null;
        const upload = { manifestHash, baseManifestHash, openAssembled, checkAll: this.#checkAllShards };
        this.#stats.uploadedBytes += await uploadDataset(remote, store, upload, this.#stop.signal);
      }
    })();
    // Meanwhile the small contents of the pages after this one go up (upload-ahead.ts says why).
    const ahead = datasets.size === 0 ? Promise.resolve(0) : uploadAheadWhile(this.#deps, remote, items.at(-1)!.seq, datasetsUp, this.#stop.signal);
    // The look-ahead never rejects and settles once the datasets have.
    const [datasetsDone, aheadSent] = await Promise.all([datasetsUp.then(() => null, (error: unknown) => ({ error })), ahead]);
    this.#stats.uploadedBytes += aheadSent;
    if (datasetsDone !== null) throw datasetsDone.error;
    let outcomes: SyncedOutcome[];
    try {
      outcomes = await remote.pushVersions(this.#deps.link.workstation, versions, this.#stop.signal);
    } catch (error) {
      // A dataset's shards were asked about against the version it replaced, which the server turned
      // out not to have whole: the retry asks about every shard.
      if (error instanceof RemoteError && error.code === 'CONTENT_NOT_AVAILABLE') this.#checkAllShards = true;
      throw error;
    }
    this.#checkAllShards = false;
    // Each page's timing, at debug level: where a first sync's time goes (bench/sync-clone.ts, BENCH_DAEMON_LOGS).
    this.#log.debug({ versions: versions.length, datasets: datasets.size, ms: Date.now() - startedAt }, 'pushed a page');
    this.#recordOutcomes(outcomes, versions);
    this.#stats.pushed += versions.length;
    this.#stats.lastPushAt = new Date().toISOString();
  }

  #recordOutcomes(outcomes: SyncedOutcome[], sent: SyncedVersion[]): void {
    const byId = new Map(sent.map((v) => [v.versionId, v]));
    // A later version of a path that crossed puts the path in step again, whatever was refused before.
    const crossed = outcomes.filter((o) => o.result !== 'refused').map((o) => byId.get(o.versionId)?.path ?? o.path);
    this.#refused.clear(crossed);
    // A server version skipped here is still missing after a version of its path crossed as a
    // conflict copy or a deletion it superseded: the server kept its own version at the path (and
    // the feed is past it). Only one the server now has at the path itself puts the path in step.
    // Cleared on any crossing, B said in sync with its own file `d` while the server's `d` was A's.
    const inStep = outcomes.filter((o) => (o.result === 'applied' || o.result === 'duplicate' || o.result === 'same') && o.path === byId.get(o.versionId)?.path);
    this.#skippedPaths.clear(inStep.map((o) => o.path));
    for (const outcome of outcomes) {
      const version = byId.get(outcome.versionId);
      if (outcome.result === 'same') this.#aliases.set(outcome.versionId, outcome.currentVersionId);
      else if (outcome.result === 'conflict') {
        this.#addConflict({ path: outcome.path, of: version?.path ?? outcome.path, at: new Date().toISOString() });
        this.#log.warn({ path: version?.path, copy: outcome.path }, 'sync conflict: the server had another change of this file; this one is kept as a conflict copy');
      } else if (outcome.result === 'refused') {
        const at = new Date().toISOString();
        this.#refused.add(version?.path ?? outcome.path, { versionId: outcome.versionId, reason: `${outcome.message} (${outcome.code})`, at });
        this.#lastError = { at, message: `${outcome.path}: ${outcome.message} (${outcome.code})`, retryAt: null };
        this.#log.error({ path: outcome.path, code: outcome.code }, `the server refused a version: ${outcome.message}`);
      }
    }
  }

  #advancePush(seq: number): void {
    this.#pushedSeq = seq;
    this.#deps.state.flags.set(this.#deps.projectId, 'sync.pushedSeq', seq);
    this.#deps.engine.holdRetention(this.#deps.projectId, seq);
    for (const resolve of this.#pushProgress.splice(0)) resolve();
  }

  // ---- pull ----

  async #pullLoop(remote: Remote): Promise<void> {
    const signal = this.#stop.signal;
    while (!signal.aborted && !this.#deps.ready()) await this.#sleep(100, 'pull');
    let attempt = 0;
    let caughtUp = false;
    while (!signal.aborted) {
      try {
        this.#pulling = caughtUp;
        // What was pushed when the server was asked: the page's `current` flags say nothing of a push
        // that landed after it answered (see #applyPage).
        const pushedAtRead = this.#pushedSeq;
        const page = await remote.changes(this.#pullCursor, { limit: PULL_BATCH, waitMs: caughtUp ? LONG_POLL_MS : 0, signal });
        this.#pulling = false;
        if (page.items.length > 0 || page.more) this.#serverAhead = true;
        attempt = 0;
        this.#offline = false;
        if (this.#paused?.startsWith('the server refused')) this.#paused = null;
        this.#recovered('pull');
        const applied = await this.#applyPage(remote, page, pushedAtRead);
        if (applied === 'held') {
          // Nothing changes here until the user confirms (which wakes this loop) or the server's
          // changes do: looked at again after a while, not read again at once (it re-read the held
          // pages ~2.6 times a second, 1,000 rows each, until confirmed).
          this.#serverAhead = true;
          caughtUp = false;
          await this.#sleep(HELD_RECHECK_MS, 'pull');
          continue;
        }
        if (applied === 'deferred') {
          // A path here has a change the server has not had when the page was read: let the push go
          // first (if it has not since: then the page is read again at once).
          this.#serverAhead = true;
          caughtUp = false;
          if (this.#pushedSeq === pushedAtRead) await this.#waitForPush(2_000);
          continue;
        }
        this.#pullCursor = page.cursor;
        this.#deps.state.flags.set(this.#deps.projectId, 'sync.pullCursor', page.cursor);
        this.#stats.lastPullAt = new Date().toISOString();
        caughtUp = !page.more;
        if (caughtUp) {
          // Read and applied up to the server's head as it was when it answered.
          this.#serverAhead = false;
          this.#guard.caughtUp();
          // Snapshots and tags when the feed is quiet (a wake-up with no versions: a snapshot or a tag
          // changed) or every few seconds: two more requests per page would slow a busy feed down.
          if (page.items.length === 0 || Date.now() - this.#lastChainPull >= CHAIN_PULL_EVERY_MS) {
            this.#lastChainPull = Date.now();
            this.#stats.snapshotsPulled += await pullSnapshots(this.#snapshotDeps(), remote, signal);
            await this.#syncSettings(remote);
          }
        }
      } catch (error) {
        this.#pulling = false;
        this.#serverAhead = null;
        caughtUp = false;
        if (signal.aborted) return;
        attempt++;
        await this.#sleep(this.#failed(error, attempt, 'pull'), 'pull');
      }
    }
  }

  /**
   * 'deferred': stopped at a version deferred for the push; 'held': the delete guard holds the page.
   * Either way the cursor stays and the page is read again.
   *
   * `pushedAtRead`, the push's position when the page was asked for, decides which paths wait for
   * the push, not the position now (the sync model's defect 3, seed 3000): B's `chmod +x c/a`, made
   * offline while C deleted `c/a`, was pushed while B's pull was reading a page whose C's deletion was
   * the server's current `c/a`; the push then brought the file back on the server (an edit beats a
   * delete), the page was applied with the push's new position, so `c/a` no longer waited for it and
   * the deletion, current when read but not any more, was adopted over B's own version: B had no
   * `c/a` while the server had B's, and said in sync. Read before the push, the page is deferred and
   * read again, and its flags then know the push.
   */
  async #applyPage(remote: Remote, page: ChangesPage, pushedAtRead: number): Promise<'applied' | 'deferred' | 'held'> {
    const { items } = page;
    if (items.length === 0) return 'applied';
    const { engine, projectId } = this.#deps;
    const startedAt = Date.now();
    const deletions = await this.#deletionsIn(remote, page);
    if (deletions === 'settling') return 'deferred';
    const { page: deletes, ahead } = deletions;
    // Measured against the files the project has here: a mount's own count knows only the files the
    // kernel has looked up (none, right after it starts), and held every deletion of 20 files or more.
    const files = deletes === 0 ? 0 : Math.max(this.#deps.trackedFiles(), await engine.countFiles(projectId));
    if (!this.#guard.admit(deletes, files, ahead)) {
      this.#log.warn({ deletes: deletes + ahead, files }, 'held: the server\'s changes delete many files here; run `strata sync confirm` to apply them');
      return 'held';
    }
    // This workstation's own versions come back in the feed: nothing to fetch for those (and asking
    // the store about each of 100,000 paged the object pack into memory).
    const known = await engine.syncKnownVersions({ projectId, versionIds: items.map((item) => item.versionId) });
    const unknown = items.filter((item) => !known.has(item.versionId));
    try {
      const downloaded = await downloadMissing(remote, this.#deps.store, unknown, this.#stop.signal, this.#deps.writesFiles === true);
      this.#stats.downloadedBytes += downloaded.bytes;
      this.#stats.downloadedObjects += downloaded.objects;
    } catch (error) {
      if (isNoRoom(error)) {
        // What did not fit, for status; what did is kept, and the retry fetches only the rest.
        const absent: string[] = [];
        for (const item of unknown) if (item.contentHash !== null && !item.dataset && !(await this.#deps.store.has(item.contentHash))) absent.push(item.path);
        this.#storeFull = { files: Math.max(1, absent.length), example: absent[0] ?? unknown[0]?.path ?? null };
      }
      throw error;
    }
    this.#storeFull = null;
    const downloadedAt = Date.now();
    const versions: PulledVersion[] = items.map((item) => ({ record: item, current: item.current }));
    const { mayReplaceDirectory } = this.#deps;
    const outcomes = await engine.adoptSyncedVersions({
      projectId,
      pushedSeq: pushedAtRead,
      versions,
      refused: this.#refused.versionIds(),
      ...(mayReplaceDirectory === undefined ? {} : { mayReplaceDirectory }),
    });
    this.#log.debug({ versions: items.length, fetched: unknown.length, downloadMs: downloadedAt - startedAt, adoptMs: Date.now() - downloadedAt }, 'pulled a page');
    this.#noteAdopted(outcomes, items);
    return outcomes.some((o) => o.result === 'deferred') ? 'deferred' : 'applied';
  }

  /**
   * The deletions of files here the page makes (moves left out: moves.ts), and those the rest of its
   * change set makes. A page with deletions whose content it writes nowhere looks ahead (at most 20
   * pages, read, not applied): for the other half of a move cut by the page's end, and, with many
   * deletions, to judge the change set whole — after a moment for the other workstation to finish
   * sending it ('settling': the page is read again then).
   */
  async #deletionsIn(remote: Remote, page: ChangesPage): Promise<{ page: number; ahead: number } | 'settling'> {
    const set = new ChangeSetDeletions();
    const hashHere = (path: string) => this.#hashHere(path);
    await set.add(page.items, hashHere, true);
    const inPage = set.count().page;
    if (inPage === 0 || !page.more) return set.count();
    const many = inPage >= DELETE_SETTLE_AT;
    if (many && this.#settledAt !== this.#pullCursor) {
      this.#settledAt = this.#pullCursor;
      await this.#sleep(DELETE_SETTLE_MS, 'pull');
      return 'settling';
    }
    let next = page;
    for (let i = 0; i < 20 && next.more; i++) {
      next = await remote.changes(next.cursor, { limit: 1000, waitMs: 0, signal: this.#stop.signal });
      await set.add(next.items, hashHere, false);
      // A few deletions: only their other halves were wanted.
      if (!many && set.count().page === 0) break;
    }
    return set.count();
  }

  /** The content a path has here (null: no file; this workstation's own deletions, back from the feed, are gone already). */
  async #hashHere(path: string): Promise<ContentHash | null> {
    return (await this.#deps.engine.stat({ projectId: this.#deps.projectId, path }))?.contentHash ?? null;
  }

  #noteAdopted(outcomes: AdoptOutcome[], items: SyncChange[]): void {
    const pathOf = new Map(items.map((item) => [item.versionId, item.path]));
    const taken: string[] = [];
    for (const outcome of outcomes) {
      const path = pathOf.get(outcome.versionId);
      if (outcome.result === 'adopted' && path !== undefined) taken.push(path);
      if (outcome.result === 'adopted' || outcome.result === 'history') this.#stats.pulled++;
      else if (outcome.result === 'copied') {
        // Made here, kept by the server as a conflict copy: the copy here is a version of its own.
        this.#aliases.set(outcome.copyVersionId, outcome.versionId);
        this.#stats.pulled++;
      } else if (outcome.result === 'skipped' && path !== undefined) {
        this.#skippedPaths.add(path, { versionId: outcome.versionId, reason: outcome.reason, at: new Date().toISOString() });
      }
    }
    // The server's version of the path is the current one here now: whatever could not be taken before is.
    this.#skippedPaths.clear(taken);
  }

  // ---- shared ----

  /** Both loops merge tags (after snapshots, which tags name) and the retention setting; one round at a time. */
  #syncSettings(remote: Remote): Promise<void> {
    const { engine, state, projectId, actor } = this.#deps;
    const deps = { engine, state, projectId, actor, log: this.#log };
    const options = { pushLocal: !this.#readOnly, signal: this.#stop.signal };
    const round = this.#settingsRound.then(async () => {
      await syncTags(deps, remote, options);
      await syncRetention(deps, remote, options);
    });
    this.#settingsRound = round.catch(() => undefined);
    return round;
  }

  #snapshotDeps(): SnapshotSyncDeps {
    const { engine, state, projectId } = this.#deps;
    return { engine, state, projectId, aliases: this.#aliases, log: this.#log };
  }

  #failed(error: unknown, attempt: number, loop: 'push' | 'pull'): number {
    const at = new Date().toISOString();
    this.#lastErrorOf = loop;
    if (error instanceof RemoteError) {
      if (error.kind === 'auth') {
        this.#paused =
          this.#deps.apiKey === null
            ? `the server refused the sign-in (${error.message}): run \`strata login\`; everything stays queued`
            : 'the server refused the API key (401): set STRATA_API_KEY and run `strata init DIR --server URL --project ID` again; everything stays queued';
        this.#lastError = { at, message: error.message, retryAt: null };
        this.#log.error(`${loop}: ${this.#paused}`);
        return 60_000;
      }
      const unreachable = error.kind === 'retry' && error.status === null;
      if (unreachable) this.#offline = true;
      const wait = unreachable ? Math.min(backoffMs(attempt), UNREACHABLE_RETRY_CAP_MS) : backoffMs(attempt, error.retryAfterMs);
      const retryAt = new Date(Date.now() + wait).toISOString();
      this.#lastError = { at, message: error.message, retryAt };
      this.#log.warn({ attempt, retryAt }, `${loop}: ${error.message}; retrying`);
      return wait;
    }
    const wait = isNoRoom(error) ? Math.min(backoffMs(attempt), NO_ROOM_RETRY_CAP_MS) : backoffMs(attempt);
    const retryAt = new Date(Date.now() + wait).toISOString();
    this.#lastError = { at, message: (error as Error).message, retryAt };
    this.#log.error({ attempt, retryAt, err: (error as Error).message }, `${loop} failed; retrying`);
    return wait;
  }

  /**
   * A loop that failed got through again: its error (and the retry time it named, by then in the past)
   * is no longer shown. Only its own: the other loop may still be failing. A refused version
   * (#recordOutcomes) is not a loop's failure and stays.
   */
  #recovered(loop: 'push' | 'pull'): void {
    // The server answers again: the other loop's retry need not wait out its backoff (a push backing
    // off for a minute after a restart of the server while the pull's long poll was already through).
    if (this.#lastErrorOf !== null && this.#lastErrorOf !== loop) this.#wake[this.#lastErrorOf]?.();
    if (this.#lastErrorOf !== loop) return;
    this.#lastError = null;
    this.#lastErrorOf = null;
  }

  #addConflict(conflict: SyncConflict): void {
    this.#conflicts = [...this.#conflicts.filter((c) => c.path !== conflict.path), conflict].slice(-MAX_CONFLICTS_SHOWN);
    this.#deps.state.flags.set(this.#deps.projectId, 'sync.conflicts', this.#conflicts);
  }

  /**
   * One pruning round at a time. A call during a round asks for another after it (the round may have
   * looked at a copy before it was deleted) and resolves once that one is done too.
   */
  #pruneConflictsSoon(): Promise<void> {
    if (this.#pruning !== null) {
      this.#pruneAgain = true;
      return this.#pruning;
    }
    const rounds = async () => {
      do {
        this.#pruneAgain = false;
        await this.#pruneConflicts();
      } while (this.#pruneAgain);
    };
    this.#pruning = rounds()
      .catch((error: unknown) => this.#log.warn({ err: (error as Error).message }, 'could not check the conflict copies; they are checked again at the next change or status'))
      .finally(() => {
        this.#pruning = null;
      });
    return this.#pruning;
  }

  /**
   * Resolving a conflict is deleting its copy (README, Sync: "delete the copy: that is an ordinary
   * edit"): an entry goes once its copy is deleted or renamed away here, whichever workstation did it
   * (another's deletion arrives through the pull). A copy with no history here is not here yet — the
   * server made it from this workstation's push and the pull brings it — and stays listed.
   */
  async #pruneConflicts(): Promise<void> {
    const { engine, projectId } = this.#deps;
    const gone = new Set<SyncConflict>();
    for (const conflict of this.#conflicts) {
      if ((await engine.stat({ projectId, path: conflict.path })) !== null) continue;
      const newest = (await engine.history({ projectId, path: conflict.path, limit: 1 })).items[0];
      if (newest !== undefined && newest.contentHash === null) gone.add(conflict);
    }
    if (gone.size === 0) return;
    // Filtered by identity: an entry added meanwhile (a new conflict at the same path) stays.
    this.#conflicts = this.#conflicts.filter((c) => !gone.has(c));
    this.#deps.state.flags.set(projectId, 'sync.conflicts', this.#conflicts);
  }

  /**
   * Sleeps up to `ms`; a loop is woken early by stop and by #wake (the push loop on a local change,
   * either loop when the other got through to the server again).
   */
  #sleep(ms: number, loop: 'push' | 'pull'): Promise<void> {
    if (this.#stop.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#stop.signal.removeEventListener('abort', done);
        if (this.#wake[loop] === done) this.#wake[loop] = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#stop.signal.addEventListener('abort', done);
      this.#wake[loop] = done;
    });
  }

  #waitForPush(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#pushProgress.push(() => {
        clearTimeout(timer);
        resolve();
      });
      this.#wake.push?.();
    });
  }
}
