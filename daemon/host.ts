// The contract between the daemon core and a *project host* (watch mode: daemon/watch/, mount mode:
// daemon/mount/). The daemon opens ONE engine, and for every project in daemon.json builds a host with
// the factory of its mode, calls start(), reports status() on `GET /v1/daemon/status`, and calls stop()
// on SIGTERM / shutdown (a mount host unmounts there). Hosts never talk HTTP: they feed the engine
// in-process through the capture pipeline, which owns the capture semantics both modes share (skip
// unchanged content, exec bit, ignore rules, mass-delete guard, last version / errors bookkeeping).
//
// A mount host lives in daemon/mount/index.ts and exports `createMountHost: HostFactory`; the daemon
// loads it with a dynamic import only when a project uses mount mode (the FUSE addon is not loaded for
// watch-only daemons).

import type { Logger } from 'pino';
import type { ContentStore, Engine } from '../engine/engine-api.js';
import type { Actor, Entry, VersionRecord } from '../engine/types.js';
import type { DaemonState } from './state.js';

export type ProjectMode = 'watch' | 'mount';

export type HostState = 'starting' | 'scanning' | 'watching' | 'mounted' | 'guarded' | 'error' | 'stopped';

export interface ScanProgress {
  /** 'initial' (first scan of the dir) or 'catch-up' (after a restart) */
  kind: 'initial' | 'catch-up';
  /** files examined so far */
  done: number;
  /** files found so far (grows while the walk runs) */
  total: number;
  /** files versioned by the scan */
  captured: number;
  finished: boolean;
}

/**
 * Watch mode's periodic reconciliation (daemon/watch/reconcile.ts): a catch-up scan of the whole tree
 * that versions what file events missed (inotify queue overflow, a broken or missing watch).
 */
export interface WatchReconcileStatus {
  /** time between periodic runs (0 = only after signs of lost events) */
  intervalMs: number;
  running: boolean;
  /** completed runs since the daemon started */
  runs: number;
  /** changes found by reconciliations that no file event had reported, since the daemon started */
  missedTotal: number;
  last: {
    reason: 'interval' | 'watch-error' | 'event-burst' | 'manual';
    startedAt: string;
    finishedAt: string;
    durationMs: number;
    /** files compared with the index (a stat each) */
    examined: number;
    /** files whose size/mtime/inode differed from the index, or new ones: read and hashed (unless renamed) */
    hashed: number;
    /** versions (writes, deletions, renames) it recorded that events had missed; non-zero deserves a look */
    missed: number;
  } | null;
  lastError: { at: string; code: string; message: string } | null;
}

/** Mount mode: what the FUSE mount holds and how fast it answers the kernel. */
export interface MountCaptureStatus {
  /** file handles open on the mount */
  openFiles: number;
  /** files changed and not yet versioned (closed and settling, or still open for writing) */
  dirty: number;
  /** up to 10 of the paths waiting for the mount to record them, those being recorded first */
  pendingPaths: string[];
  /** of those, files whose bytes sit in a staging file (above 64 KiB) rather than in memory */
  staged: number;
  /** FUSE requests answered since the mount started, per operation (time: callback to answer, queueing included) */
  ops: Record<string, { count: number; totalMs: number; avgUs: number }>;
  /** kernel requests received, per kind, and those native/fuse answered without JS (e.g. 'Read (served in C)') */
  requests: Record<string, number>;
  /**
   * files the project has (pulled, restored) that the mount cannot show: a directory made here holds
   * something at their name (sync's WRITE_FAILED until the user moves it)
   */
  notShown?: { count: number; example: string | null };
}

/** What a host reports; the daemon adds the capture pipeline's stats (pending, last version, errors). */
export interface HostStatus {
  state: HostState;
  /** e.g. 'inotify', 'polling' (watch) or 'fuse' (mount) */
  backend?: string;
  /**
   * watch mode while polling: the interval, and why: the project's setting (`strata watch --poll`), a
   * network filesystem, the inotify watch limit, or the daemon's options (tests)
   */
  poll?: { intervalMs: number; reason: 'setting' | 'network' | 'inotify-limit' | 'forced' } | null;
  scan?: ScanProgress | null;
  /** loud, user-facing conditions: polling fallback on NFS, inotify limit reached, stale mount removed */
  warnings: string[];
  /** work the host holds before it reaches the pipeline (watch: paths in their settle delay) */
  pending?: number;
  /** set when state is 'error' */
  error?: { code: string; message: string };
  /** captures the host made without the shared pipeline (mount mode versions through its own sink) */
  capture?: Pick<CaptureStats, 'captured' | 'lastVersion' | 'errors'> & Partial<Pick<CaptureStats, 'historyNotKept'>>;
  reconcile?: WatchReconcileStatus;
  mount?: MountCaptureStatus;
  /** watch mode: changes made elsewhere (restores, the API, other processes) brought to disk */
  incoming?: IncomingStatus;
  /**
   * Files and directories here whose names the project cannot record (not valid UTF-8): neither
   * versioned nor synced. `paths` shows up to 20, non-UTF-8 bytes as \xHH.
   */
  unrepresentable?: { count: number; paths: string[] };
}

export interface IncomingStatus {
  /** paths written, removed or kept (an unversioned local edit versioned first) since the daemon started */
  applied: number;
  last: { path: string; result: string; at: string } | null;
  /** changes recorded in the engine are being (or about to be) brought to disk */
  busy: boolean;
  /** paths the project has that could not be written here (a full disk, a permission), and one of them */
  notOnDisk: { count: number; example: string | null; diskFull?: number };
}

export interface ProjectHost {
  /** Resolves once the host serves the project (watching or mounted); rejects if it cannot. */
  start(): Promise<void>;
  /** Stops capturing, flushes pending captures, releases the directory (unmounts). Idempotent. */
  stop(): Promise<void>;
  status(): HostStatus;
  /**
   * How many files the project tracks now (the mass-delete guard compares deletions against it).
   * Watch mode counts its index; a mount host counts its tree.
   */
  trackedFiles(): number;
  /** Looks at the whole tree again (after `strata guard reset`: records the deletions it held back). */
  rescan?(): Promise<void>;
  /** Watch mode: a reconciliation now (or the one under way); see WatchReconcileStatus. */
  reconcile?(): Promise<void>;
  /**
   * Watch mode: files that appeared and are not examined yet (a directory moved within the project):
   * null when none, else a promise of the next progress (watch/arrivals.ts). Deletions wait for them.
   */
  arrivals?(): Promise<void> | null;
  /** Watch mode: the engine has changes not brought to disk yet (incoming.ts behind()). */
  diskBehind?(): Promise<boolean>;
  /**
   * Versions every change made in the directory up to now that is still waiting to be captured (an
   * edit in its settle delay, a deletion waiting to commit, what a scan under way has yet to reach).
   * Called before a change made elsewhere that is computed from the project's current state — a
   * restore, a snapshot — so that an edit made before it is in history first and the restore lands
   * on top of it (README: "never over an edit that was not versioned yet").
   */
  captureNow?(): Promise<void>;
  /**
   * Before a restore or a write through the API records anything: throws a coded error when one of
   * `paths` (files or links it will write) cannot be written to the directory — the API must never
   * report a change it cannot make (a link where a directory on the way should be, a directory in
   * the way holding unversioned files). `removing`: paths the same operation deletes first (a
   * snapshot restore that turns a versioned link back into a directory removes the link itself).
   */
  checkWritable?(paths: string[], removing?: ReadonlySet<string>): Promise<void>;
  /**
   * Whether the directory at `path` may give way to a file sync takes there (its files below are
   * versions the server kept as conflict copies: engine/commands/sync-make-way-above.ts): false when
   * it holds anything the project has not recorded — files not captured yet, ignored ones — which
   * the file would lose (watch mode: on disk) or put out of reach (a mount: its backing directory).
   */
  mayReplaceDirectory?(path: string): Promise<boolean>;
}

/** Outcome of one capture: a new version, or why none was made. */
export type CaptureOutcome =
  /** `conflictCopy`: the edit was recorded there, not at its path (pipeline.ts conflictCopies) */
  | { kind: 'versioned'; version: VersionRecord; entry: Entry | null; conflictCopy?: string }
  /** content hash, exec bit and symlink flag equal the current entry's: nothing was recorded */
  | { kind: 'unchanged'; entry: Entry }
  | { kind: 'ignored' }
  /** a deletion the mass-delete guard held back (nothing recorded, data kept) */
  | { kind: 'guarded' }
  /** nothing to do: a delete of a path the engine does not have, a rename whose source is unknown */
  | { kind: 'absent' }
  /** recorded in stats().errors and logged; the host may retry later */
  | { kind: 'failed'; code: string; message: string };

export interface CaptureStats {
  pending: number;
  captured: number;
  lastVersion: { path: string; versionId: string; kind: string; timestamp: string } | null;
  /** the last 20 errors, oldest first */
  errors: Array<{ time: string; path: string | null; code: string; message: string }>;
  massDeleteGuard: { tripped: boolean; since: string | null; missing: number };
  /** paths whose older versions the size policy does not keep (over the threshold, not allowlisted) */
  historyNotKept: { count: number; example: { path: string; size: number } | null };
}

/**
 * Capture semantics shared by both modes. Paths are project paths ('/'-separated, relative to the
 * project root). Every method is safe to call concurrently; calls for the same path are serialized in
 * call order.
 */
export interface CapturePipeline {
  /** True for `.strata/`, the default ignores and `.strataignore` patterns. `dir` for directories. */
  isIgnored(path: string, dir?: boolean): boolean;
  /**
   * Versions the content of `file` (an absolute path: the file itself in watch mode, the staging file
   * in mount mode) as `path`. Skipped ('unchanged') when the content hash and exec bit equal the
   * current entry's. The file is read by the store in a worker thread; it must not change meanwhile
   * (the mount passes a finished staging file; watch mode re-checks size/mtime afterwards). `file` is
   * opened without following a symbolic link anywhere on its way: a link there now (or a directory on
   * the way replaced by one) is 'absent', its event follows.
   */
  captureFile(input: {
    path: string;
    file: string | Buffer;
    executable: boolean;
    /** the file's ctime in µs (watch mode): the most recently changed are read first (capture-queue.ts) */
    changedAt?: number;
  }): Promise<CaptureOutcome>;
  /**
   * Versions a symbolic link at `path` whose target is `target` (the bytes readlink returned; the
   * link is never followed). Skipped ('unchanged') when the current entry is that very link.
   */
  captureLink(input: { path: string; target: Uint8Array; changedAt?: number }): Promise<CaptureOutcome>;
  /**
   * The path is gone: a tombstone, unless the mass-delete guard holds it back ('guarded'). Deletions
   * wait a short settle time (so the guard sees a mass deletion whole, and a delete followed by a
   * re-create — some editors' saves — is no deletion at all: a captureFile of the path cancels it).
   */
  captureDelete(path: string): Promise<CaptureOutcome>;
  /**
   * A rename the host saw as one operation: history stays findable under `to` (a tombstone at `from`,
   * the same content at `to`, no bytes copied; an existing `to` is replaced). Cancels a pending
   * deletion of either path. 'absent' when the engine has no `from`: capture `to` as a new file then.
   */
  captureRename(from: string, to: string): Promise<CaptureOutcome>;
  /**
   * Mount mode: asked before the host itself deletes a tracked file (an unlink through the mount).
   * Counts it towards the mass-delete guard; false while the guard is tripped, or when this deletion
   * trips it: the host refuses it (EPERM) and the file stays.
   */
  admitDelete(path: string): boolean;
  /**
   * Whether the pipeline itself committed this version (and forgets it): watch mode's engine feed
   * (watch/engine-feed.ts) leaves the directory's own versions out of what it brings to disk.
   */
  takeOwnVersion(versionId: string): boolean;
  /** Resolves when every capture submitted so far is durable. */
  flush(): Promise<void>;
  stats(): CaptureStats;
  /**
   * Clears a tripped mass-delete guard (`strata guard reset`): the user looked and the deletions are
   * real, so for a grace period (30 s) deletions are recorded however many there are — long enough
   * for the host's rescan to record the ones that were held back.
   */
  resetGuard(): void;
}

export interface HostContext {
  engine: Engine;
  projectId: string;
  /** absolute, real path of the project directory (the mount point in mount mode) */
  dir: string;
  /** the actor versions are attributed to (kind 'local') */
  actor: Actor;
  /** the daemon's own state DB (daemon/state.sqlite); never the engine's metadata DB */
  state: DaemonState;
  logger: Logger;
  capture: CapturePipeline;
  /** the Strata home */
  home: string;
  /**
   * Where the mount stages: `<home>/daemon/staging` (the store's filesystem), or a local disk directory
   * when the home is on a network filesystem (mount/staging-dir.ts)
   */
  stagingDir: string;
  /** the other place a mount may have staged in an earlier run, for its crash leftovers (recovery.ts) */
  formerStagingDir?: string;
  /**
   * The host recorded versions through an engine other than `engine` (the mount's capture thread has
   * its own), whose listeners therefore heard nothing: sync's push loop is told here.
   */
  versioned?: () => void;
  /**
   * The home's local content store, for reads that must not go through a stream (the mount's
   * positional reads). Writes still go through the engine (capture pipeline).
   */
  store?: ContentStore;
  /**
   * The synced project's workstation name (the sync link's), which names conflict copies: a mount
   * keeps a file the project's tree refuses because of a change from elsewhere as one
   * (mount/reconciler.ts). Absent: not synced.
   */
  workstation?: string;
}

export type HostFactory = (ctx: HostContext) => ProjectHost;
