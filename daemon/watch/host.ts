// Watch mode: versions what lands in an ordinary directory. Events (one inotify watch per directory,
// tree-watcher.ts) only say "look at this path"; each path waits for a quiet period (settle.ts: the
// settle delay, so a burst of writes is one version and an editor's temp file is gone before we look),
// then examine.ts decides. A scan at start catches up with what changed while the daemon was down.
// Network filesystems and an exhausted inotify limit fall back to polling, loudly. A periodic
// reconciliation (reconcile.ts) catches what events missed.
//
// The other direction: what the engine records without this directory (a restore, `strata put/rm/mv`,
// another process, later a sync) is brought to disk by incoming.ts. Examining a path and bringing it
// to disk run one at a time per path.

import { join } from 'node:path';
import { isStrataError } from '../../engine/errors.js';
import { DEFAULT_POLL_MS } from '../config.js';
import type { HostContext, HostFactory, HostStatus, ProjectHost, ScanProgress } from '../host.js';
import { STRATAIGNORE } from '../capture/ignore.js';
import { isTempName, TEMP_SETTLE_MS } from '../capture/temp-names.js';
import { type ExamineContext, examine } from './examine.js';
import { detectFs, type FsInfo } from './fs-type.js';
import { IncomingChanges } from './incoming.js';
import { directoryInTheWay, openBeneath, throughLink } from '../beneath.js';
import { blockingBelow } from './in-the-way.js';
import { isLinkTemp, removeLinkTemp, sweepIncoming } from './leftovers.js';
import { INCOMING_DIR } from './materialize.js';
import {
  DEFAULT_RECONCILE_DEBOUNCE_MS,
  DEFAULT_RECONCILE_DUTY,
  maxQueuedEvents,
  type Pacer,
  type ReconcileCounts,
  ReconcileScheduler,
  reconcileIntervalFromEnv,
} from './reconcile.js';
import { plainWalk, scanTree, type Walk } from './scan.js';
import { SettleTimers } from './settle.js';
import { Arrivals } from './arrivals.js';
import { OwnWrites } from './own-writes.js';
import { TreeWatcher } from './tree-watcher.js';
import { UnrepresentableNames } from './unrepresentable.js';

export interface WatchOptions {
  /** quiet time after the last event before a path is examined (default 100 ms) */
  settleMs?: number;
  /** a path that never goes quiet (a log written every 50 ms) is still examined this often (default 2 s) */
  maxWaitMs?: number;
  /**
   * quiet time before a NEW file with a temp-file name (tmpXXXXXXXX, *.tmp, .name.XXXXXX, *.part…) is
   * versioned, so a slow atomic save (write temp, pause, rename over the target) versions only the
   * target (default 5 s; see capture/temp-names.ts)
   */
  tempSettleMs?: number;
  /** polling interval on network filesystems (default 5 s) */
  pollMs?: number;
  /** poll even on a local filesystem (tests, or inotify unwanted) */
  forcePolling?: boolean;
  /** the polling is the project's own setting (`strata watch --poll`, daemon.json `pollMs`) */
  pollChosen?: boolean;
  /** injected fs.watch (tests of the inotify-limit path) */
  watch?: ConstructorParameters<typeof TreeWatcher>[0]['watch'];
  /** re-reads .strataignore */
  reloadIgnore?: () => string | null;
  /** periodic reconciliation (default STRATA_WATCH_RECONCILE_MS, else 10 min; 0 = only after signs of lost events) */
  reconcileMs?: number;
  /** wait after a sign of lost events before reconciling (default 1 s) */
  reconcileDebounceMs?: number;
  /** share of wall time a reconciliation works, 0 < duty ≤ 1 (default 0.25) */
  reconcileDuty?: number;
  /**
   * how often the project's history is read for changes other processes made (default 1 s: one
   * indexed row); this process's own engine announces its changes, which are read 100 ms later
   */
  feedPollMs?: number;
  /** a path that could not be brought to disk is tried again after this, doubling up to the cap (default 500 ms, 5 min) */
  incomingRetry?: { baseMs: number; failedCapMs: number };
}

const TRACKED_TTL_MS = 1_000;
/**
 * A file the store could not take (a full disk, a failing one) is looked at again after 0.5 s, 1 s,
 * 2 s, … then every 30 s until it is versioned: without this, a file written while the home was full
 * stayed unversioned after space was freed until the next reconciliation (10 min) or restart.
 */
const CAPTURE_RETRY_CODES = new Set(['STORAGE_ERROR', 'DISK_FULL', 'ENOSPC', 'EDQUOT', 'EIO']);
const CAPTURE_RETRY_BASE_MS = 500;
const CAPTURE_RETRY_MAX_MS = 30_000;
/**
 * captureNow() rounds at most: each can reveal more (a new directory's files); a tool writing all the
 * while must not hold a restore up forever.
 */
const CAPTURE_NOW_ROUNDS = 8;

export function watchHostFactory(options: WatchOptions = {}): HostFactory {
  return (ctx) => new WatchHost(ctx, options);
}

export function inotifyLimitMessage(): string {
  return (
    'the inotify watch limit (fs.inotify.max_user_watches) is exhausted, so this project is polled instead of watched. ' +
    'Raise it: `sudo sysctl fs.inotify.max_user_watches=524288`, and keep it across reboots with ' +
    '`echo fs.inotify.max_user_watches=524288 | sudo tee /etc/sysctl.d/60-strata.conf`; then restart the daemon.'
  );
}

class WatchHost implements ProjectHost {
  readonly #ctx: HostContext;
  readonly #options: WatchOptions;
  readonly #timers: SettleTimers;
  readonly #running = new Map<string, { again: boolean; done: Promise<void> }>();
  readonly #warnings: string[] = [];
  #watcher: TreeWatcher | null = null;
  #pollTimer: NodeJS.Timeout | undefined;
  #polling = false;
  #pollReason: NonNullable<HostStatus['poll']>['reason'] = 'forced';
  #fs: FsInfo | null = null;
  #scanning: Promise<void> | null = null;
  #rescan: Promise<void> | null = null;
  #scan: ScanProgress | null = null;
  #state: HostStatus['state'] = 'starting';
  #error: HostStatus['error'];
  #stopped = false;
  #tracked = { count: 0, at: 0 };
  #reconciler: ReconcileScheduler | null = null;
  readonly #examineCtx: ExamineContext;
  readonly #incoming: IncomingChanges;
  /** per path: the examine or materialization under way (they must not interleave on one path) */
  readonly #pathLocks = new Map<string, Promise<unknown>>();
  /** paths whose capture failed: attempts so far, and the timer of the next */
  readonly #retries = new Map<string, { attempts: number; timer: NodeJS.Timeout | null }>();
  /** names on disk the project cannot record (not UTF-8): said in status, the log and the sync verdict */
  readonly #badNames: UnrepresentableNames;
  /** files a directory that appeared brought, not examined yet (their renames cancel pending deletions) */
  readonly #arrivals = new Arrivals();
  /** what incoming rounds wrote, so the watcher's events for those writes cost no examine */
  readonly #own = new OwnWrites();

  constructor(ctx: HostContext, options: WatchOptions) {
    this.#ctx = ctx;
    this.#options = options;
    this.#badNames = new UnrepresentableNames(ctx.dir, ctx.logger);
    this.#timers = new SettleTimers({
      dir: ctx.dir,
      settleMs: options.settleMs ?? 100,
      maxWaitMs: options.maxWaitMs ?? 2_000,
      tempSettleMs: options.tempSettleMs ?? TEMP_SETTLE_MS,
      isNewTemp: (path) => isTempName(path) && ctx.state.index.get(ctx.projectId, path) === undefined && !ctx.capture.isIgnored(path),
      examine: (path) => this.#examine(path),
      ownWrite: (path, st) => {
        if (!this.#own.take(path, st)) return false;
        this.#arrivals.examined(path);
        return true;
      },
    });
    this.#incoming = new IncomingChanges({
      host: ctx,
      withPath: (path, task) => this.#withPath(path, task),
      scanning: () => this.#scanning,
      pollMs: options.feedPollMs ?? 1_000,
      own: this.#own,
      ...(options.incomingRetry === undefined ? {} : { retry: options.incomingRetry }),
    });
    this.#examineCtx = {
      host: ctx,
      exclusive: (path, task) => this.#withPath(path, task),
      onDirectory: async (path, st) => {
        // Watch it, and look at what is already in it (`mv dir here`, `tar x`, `git clone`).
        const watcher = this.#watcher;
        if (watcher === null || watcher.watches(path, st)) return;
        // Not watched, or a watch under this name is on a directory that is gone (tree-watcher.ts
        // watches): it and the watches below it are dead, and the directory here is walked anew.
        await this.#arrivals.walk(() =>
          watcher.replaceTree(path, (file) => {
            this.#arrivals.add(file);
            this.schedule(file);
          }),
        );
      },
      onDirectoryGone: (path) => this.#watcher?.removeTree(path),
      onCaptureFailed: (path, code) => this.#retryCapture(path, code),
      onConflictCopy: (path) => this.#incoming.bringAgain(path),
    };
  }

  async start(): Promise<void> {
    // Before anything is examined or brought to disk: the temps a crash mid-write left (leftovers.ts).
    await this.#sweepLeftovers();
    const fs = await detectFs(this.#ctx.dir);
    this.#fs = fs;
    const network = fs?.network === true;
    if (this.#options.pollChosen === true) {
      this.#pollReason = 'setting';
      this.#ctx.logger.info({ dir: this.#ctx.dir, pollMs: this.#pollMs() }, `polling every ${this.#pollMs() / 1000} s (strata watch --poll)`);
    } else if (network) {
      this.#pollReason = 'network';
      this.#warn(
        `${this.#ctx.dir} is on ${fs!.fsType} (${fs!.source}), which does not report changes made by other machines: polling every ${this.#pollMs() / 1000} s instead of watching. ` +
          "Other machines' writes show here after the poll and the client's attribute cache (NFS: up to acregmax, 60 s by default; sshfs: 20 s)",
      );
    }
    this.#polling = network || this.#options.forcePolling === true;
    const kind = this.#ctx.state.index.count(this.#ctx.projectId) > 0 ? 'catch-up' : 'initial';
    const scan: ScanProgress = { kind, done: 0, total: 0, captured: 0, finished: false };
    let walk: Walk = plainWalk(this.#ctx.dir, (path) => this.#ctx.capture.isIgnored(path, true), this.#onBadName);
    if (!this.#polling) {
      const reconciler = new ReconcileScheduler({
        intervalMs: this.#options.reconcileMs ?? reconcileIntervalFromEnv(this.#ctx.logger),
        debounceMs: this.#options.reconcileDebounceMs ?? DEFAULT_RECONCILE_DEBOUNCE_MS,
        duty: this.#options.reconcileDuty ?? DEFAULT_RECONCILE_DUTY,
        burstEvents: Math.floor((await maxQueuedEvents()) / 2),
        logger: this.#ctx.logger,
        run: (pace) => this.#reconcile(pace),
      });
      this.#reconciler = reconciler;
      const watcher = new TreeWatcher({
        root: this.#ctx.dir,
        ignoreDir: (path) => this.#ctx.capture.isIgnored(path, true),
        onPath: (path) => {
          reconciler.noteEvent(Date.now());
          this.schedule(path);
        },
        onError: (error, path) => this.#watchError(error, path),
        onBadName: this.#onBadName,
        ...(this.#options.watch ? { watch: this.#options.watch } : {}),
      });
      this.#watcher = watcher;
      // Every directory is watched before start() resolves and status leaves 'starting' (a quick
      // walk: no file is looked at); only then are the files compared and versioned. Watching as the
      // slow pass went along left the directories it reached last unwatched for seconds, and a change
      // there was seen only as its final state: a content that lived a second during a catch-up was
      // never versioned (issue 13 item 8).
      await watcher.addTree('');
      // Unless the inotify limit ran out on the way (#watchError switched to polling: the walk is plain).
      if (!this.#polling) {
        walk = (onFile) => watcher.addTree('', onFile, { revisit: true });
        reconciler.start();
      }
    }
    this.#scan = scan;
    this.#state = 'scanning';
    // Serve while the scan runs: start() resolves once watching; the scan's progress is in status.
    this.#scanning = scanTree(this.#examineCtx, this.#sweepingLinkTemps(walk), scan).then(
      () => {
        this.#scanning = null;
        if (this.#state === 'scanning') this.#state = 'watching';
        this.#ctx.logger.info({ scan: this.#scan }, 'scan finished');
        if (this.#polling) this.#schedulePoll();
        this.#incoming.start();
      },
      (error: unknown) => {
        this.#scanning = null;
        this.#fail(error);
      },
    );
  }

  /**
   * A name that is not UTF-8 (raw bytes) in `dir`: found by a walk (`directory` known) or named by an
   * event (looked at: it may be gone already). Unless the ignore rules cover it, it is listed as not
   * versioned (unrepresentable.ts).
   */
  readonly #onBadName = (dir: string, name: Buffer, directory?: boolean): void => {
    if (this.#stopped) return;
    if (directory === undefined) {
      void this.#badNames.event(dir, name).catch((error: unknown) => this.#ctx.logger.warn({ err: (error as Error).message }, 'could not look at a name that is not UTF-8'));
    } else if (!this.#ctx.capture.isIgnored(dir === '' ? name.toString('utf8') : `${dir}/${name.toString('utf8')}`, directory)) {
      this.#badNames.found(dir, name, directory);
    }
  };

  /** Empties `.strata/incoming/` of the `.part` files of writes a crash interrupted. */
  async #sweepLeftovers(): Promise<void> {
    try {
      const swept = await sweepIncoming(this.#ctx.dir);
      if (swept.files > 0) this.#ctx.logger.info({ ...swept, dir: INCOMING_DIR }, 'removed the temp files of interrupted writes');
    } catch (error) {
      // Garbage, not state: the project is watched all the same, and the next start tries again.
      this.#ctx.logger.warn({ dir: INCOMING_DIR, err: (error as Error).message }, 'could not remove the temp files of interrupted writes');
    }
  }

  /**
   * The start-up walk, with the link temps of interrupted writes removed on the way. Only this first
   * walk: nothing is brought to disk before it ends (incoming.ts starts after it), so no link temp
   * it meets is one being made; later walks run alongside materialize.ts and leave them alone.
   */
  #sweepingLinkTemps(walk: Walk): Walk {
    return (onFile) =>
      walk(async (path) => {
        if (!isLinkTemp(path)) return onFile(path);
        try {
          if (await removeLinkTemp(this.#ctx.dir, path)) {
            this.#ctx.logger.info({ path }, 'removed the temp link of an interrupted write');
            return;
          }
        } catch (error) {
          this.#ctx.logger.warn({ path, err: (error as Error).message }, 'could not remove the temp link of an interrupted write');
        }
        // A file of the user's with such a name: examined like any other (and found ignored).
        return onFile(path);
      });
  }

  /** Resolves when the current scan (if any) has finished. */
  async scanned(): Promise<void> {
    await this.#scanning;
  }

  schedule(path: string): void {
    if (this.#stopped) return;
    if (path === STRATAIGNORE) {
      const problem = this.#options.reloadIgnore?.() ?? null;
      if (problem) this.#warn(problem);
      // Files the old rules ignored may now be wanted: look at the tree again (stat-only for the rest).
      void this.rescan().catch((error: unknown) => this.#ctx.logger.warn({ err: (error as Error).message }, 'rescan failed'));
    }
    this.#timers.schedule(path);
  }

  #retryCapture(path: string, code: string): void {
    if (this.#stopped || !CAPTURE_RETRY_CODES.has(code)) return;
    const retry = this.#retries.get(path) ?? { attempts: 0, timer: null };
    if (retry.timer !== null) return;
    retry.attempts += 1;
    retry.timer = setTimeout(
      () => {
        retry.timer = null;
        this.schedule(path);
      },
      Math.min(CAPTURE_RETRY_MAX_MS, CAPTURE_RETRY_BASE_MS * 2 ** (retry.attempts - 1)),
    );
    this.#retries.set(path, retry);
  }

  #examine(path: string): Promise<void> {
    const running = this.#running.get(path);
    if (running) {
      running.again = true;
      return running.done;
    }
    const slot = { again: false, done: Promise.resolve() };
    slot.done = (async () => {
      try {
        do {
          slot.again = false;
          try {
            const result = await this.#withPath(path, () => examine(this.#examineCtx, path));
            if (result === 'captured') this.#incoming.capturedHere(path);
            // No retry armed by this look (versioned, unchanged or gone): the count starts over.
            if (this.#retries.get(path)?.timer === null) this.#retries.delete(path);
          } catch (error) {
            this.#ctx.logger.warn({ path, err: (error as Error).message }, 'could not examine a path');
          }
        } while (slot.again && !this.#stopped);
      } finally {
        this.#running.delete(path);
        this.#arrivals.examined(path);
      }
    })();
    this.#running.set(path, slot);
    return slot.done;
  }

  /** Runs `task` after whatever else is under way on `path` (examine, materialize). */
  #withPath<T>(path: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#pathLocks.get(path) ?? Promise.resolve();
    const next = previous.then(task, task);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    this.#pathLocks.set(path, settled);
    void settled.then(() => {
      if (this.#pathLocks.get(path) === settled) this.#pathLocks.delete(path);
    });
    return next;
  }

  #pollMs(): number {
    return this.#options.pollMs ?? DEFAULT_POLL_MS;
  }

  #schedulePoll(): void {
    if (this.#stopped) return;
    this.#pollTimer = setTimeout(() => {
      const progress: ScanProgress = { kind: 'catch-up', done: 0, total: 0, captured: 0, finished: false };
      const walk = plainWalk(this.#ctx.dir, (path) => this.#ctx.capture.isIgnored(path, true), this.#onBadName);
      this.#scanning = scanTree(this.#examineCtx, walk, progress).then(
        () => {
          this.#scanning = null;
          this.#schedulePoll();
        },
        (error: unknown) => {
          this.#scanning = null;
          this.#ctx.logger.warn({ err: (error as Error).message }, 'poll failed');
          this.#schedulePoll();
        },
      );
    }, this.#pollMs());
  }

  #watchError(error: NodeJS.ErrnoException, path: string): void {
    if (error.code === 'ENOSPC' && !this.#polling) {
      this.#warn(inotifyLimitMessage());
      this.#ctx.logger.error({ dir: this.#ctx.dir }, inotifyLimitMessage());
      this.#polling = true;
      this.#pollReason = 'inotify-limit';
      // Every poll is a full scan: no reconciliation needed on top.
      void this.#reconciler?.stop();
      // Release the watches we hold (they count against the same limit as everyone else's) and poll.
      this.#watcher?.close();
      this.#watcher = null;
      // During start() the first scan has yet to begin: it schedules the first poll when it ends.
      if (this.#state === 'starting') return;
      if (this.#scanning === null) this.#schedulePoll();
      else void this.#scanning.then(() => this.#schedulePoll());
      return;
    }
    if (error.code === 'ENOSPC') return;
    this.#ctx.logger.warn({ path: join(this.#ctx.dir, path), err: error.message }, 'watch failed');
    // Events in that directory may be lost until it is watched again: the reconciliation re-adds it.
    this.#reconciler?.request('watch-error');
  }

  /**
   * ProjectHost.captureNow: the kernel's queued events are read (the watcher's descriptor is polled
   * once per turn of the event loop), every path waiting out its settle delay is examined now, new
   * directories are walked (examine adds their watches and schedules what is already in them, so
   * this goes round until nothing new turns up), and deletions waiting to see whether they are half
   * of a rename are committed. Without it `rm f; strata snapshot restore 1` restored nothing (the
   * engine still had f) and the deletion landed after the restore: f stayed deleted (issue 38 item 9).
   */
  async captureNow(): Promise<void> {
    if (this.#stopped) return;
    await this.#scanning?.catch(() => undefined);
    for (let round = 0; round < CAPTURE_NOW_ROUNDS; round++) {
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setTimeout(resolve, 0));
      if (this.#timers.dueCount === 0 && this.#running.size === 0 && round > 0) break;
      await this.#timers.settleNow();
      await Promise.all([...this.#running.values()].map((slot) => slot.done));
      await this.#ctx.capture.flush();
    }
  }

  /**
   * ProjectHost.checkWritable: no link where a directory on the way should be (nothing is written
   * through a link, so the write would never reach the disk); and a directory on disk where a file
   * goes may go only if what is below it is directories, or files the project has (a restore removes
   * those itself; a write is refused by the engine).
   */
  async checkWritable(paths: string[], removing: ReadonlySet<string> = new Set()): Promise<void> {
    const { state, projectId, capture } = this.#ctx;
    const removable = (path: string) => !capture.isIgnored(path) && state.index.get(projectId, path) !== undefined;
    for (const path of paths) {
      if (capture.isIgnored(path)) continue;
      const slash = path.lastIndexOf('/');
      const parent = await openBeneath(this.#ctx.dir, slash === -1 ? '' : path.slice(0, slash), { create: false });
      if (parent.kind === 'dir') await parent.dir.close();
      if (parent.kind === 'link' && !removing.has(parent.at)) throw throughLink(path, parent.at);
      const blocking = await blockingBelow(this.#ctx.dir, path, removable);
      if (blocking !== null) throw directoryInTheWay(path, blocking);
    }
  }

  /**
   * ProjectHost.mayReplaceDirectory: checkWritable's answer for a file at `path` (below it nothing
   * but directories and files the project has as they are).
   */
  async mayReplaceDirectory(path: string): Promise<boolean> {
    try {
      await this.checkWritable([path]);
      return true;
    } catch (error) {
      if (isStrataError(error)) return false;
      throw error;
    }
  }

  /** Reconciles now (or joins the run under way): the tests' entry point, and `manual` in status. */
  reconcile(): Promise<void> {
    return this.#reconciler?.run('manual') ?? Promise.resolve();
  }

  /** One reconciliation: the catch-up scan, through the watcher, leaving paths with events pending alone. */
  async #reconcile(pace: Pacer): Promise<ReconcileCounts> {
    await this.#scanning?.catch(() => undefined);
    const counts: ReconcileCounts = { examined: 0, hashed: 0, missed: 0 };
    const watcher = this.#watcher;
    if (this.#stopped || watcher === null) return counts;
    const progress: ScanProgress = { kind: 'catch-up', done: 0, total: 0, captured: 0, finished: false };
    // Walking through the watcher re-adds watches that broke or were never added.
    const walk: Walk = (onFile) => watcher.addTree('', onFile, { revisit: true });
    await scanTree(this.#examineCtx, walk, progress, {
      pace,
      // An event is already on its way for these: they are not "missed".
      skip: (path) => this.#timers.has(path) || this.#running.has(path) || this.#pathLocks.has(path),
      onExamined: (result, gone) => {
        if (!gone) counts.hashed += 1;
        if (result === 'captured' || result === 'deleted') counts.missed += 1;
      },
    });
    counts.examined = progress.done;
    return counts;
  }

  /**
   * The loud line once reconciliations found changes that no event reported. Every poll is a full scan,
   * so once polling (the inotify limit ran out since) the misses are history, not inotify's doing now.
   * Events also never come for writes made by other machines: on a filesystem Strata did not recognise
   * as a network one (a FUSE client: JuiceFS, s3ql ...) that is the likelier cause, and the remedy is
   * `strata watch --poll`, not a bigger inotify queue.
   */
  #missedWarning(reconcile: NonNullable<HostStatus['reconcile']>): string | null {
    const { missedTotal, last } = reconcile;
    if (missedTotal === 0) return null;
    const found = `reconciliation found ${missedTotal} change(s) that file events had missed (now versioned; last run ${last?.finishedAt ?? ''}, ${last?.missed ?? 0} missed)`;
    if (this.#polling) return `${found}, before this project was polled; polling scans the whole tree every ${this.#pollMs() / 1000} s, so nothing waits for events now.`;
    const fs = this.#fs;
    const elsewhere =
      `If other machines write to ${this.#ctx.dir}${fs === null ? '' : ` (on ${fs.fsType}${fs.source === '' ? '' : ` from ${fs.source}`})`}, their writes make no events here: ` +
      `\`strata watch --poll ${this.#ctx.dir}\` looks for them every ${DEFAULT_POLL_MS / 1000} s.`;
    if (fs !== null && (fs.fsType === 'fuse' || fs.fsType.startsWith('fuse.'))) return `${found}. ${elsewhere} Otherwise events were lost: the inotify queue overflowed or a watch broke.`;
    return (
      `${found}. Events are lost when the inotify queue overflows (raise fs.inotify.max_queued_events, e.g. \`sudo sysctl fs.inotify.max_queued_events=65536\`) or a watch breaks. ` +
      elsewhere
    );
  }

  #warn(message: string): void {
    if (!this.#warnings.includes(message)) this.#warnings.push(message);
    this.#ctx.logger.warn(message);
  }

  #fail(error: unknown): void {
    const code = (error as { code?: string }).code ?? 'INTERNAL';
    this.#state = 'error';
    this.#error = { code, message: (error as Error).message };
    this.#ctx.logger.error({ err: (error as Error).message }, 'watch host failed');
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#pollTimer) clearTimeout(this.#pollTimer);
    for (const retry of this.#retries.values()) if (retry.timer !== null) clearTimeout(retry.timer);
    this.#retries.clear();
    await this.#incoming.stop();
    const reconciling = this.#reconciler?.stop();
    this.#watcher?.close();
    // Whatever was written just before the stop is still captured.
    const due = this.#timers.stop();
    await Promise.all(due.map((path) => this.#examine(path)));
    await Promise.all([...this.#running.values()].map((slot) => slot.done));
    await reconciling;
    await this.#scanning?.catch(() => undefined);
    await this.#ctx.capture.flush();
    this.#state = 'stopped';
  }

  diskBehind(): Promise<boolean> {
    return this.#incoming.behind();
  }

  status(): HostStatus {
    const guarded = this.#ctx.capture.stats().massDeleteGuard.tripped;
    const state = this.#state === 'watching' && guarded ? 'guarded' : this.#state;
    const status: HostStatus = {
      state,
      backend: this.#polling ? 'polling' : 'inotify',
      poll: this.#polling ? { intervalMs: this.#pollMs(), reason: this.#pollReason } : null,
      scan: this.#scan ? { ...this.#scan } : null,
      warnings: [...this.#warnings],
      pending: this.#timers.size + this.#running.size,
      incoming: this.#incoming.status(),
    };
    status.warnings.push(...this.#incoming.warnings());
    const bad = this.#badNames.summary();
    status.warnings.push(...bad.lines);
    status.unrepresentable = { count: bad.count, paths: bad.paths };
    if (this.#reconciler) {
      status.reconcile = this.#reconciler.status();
      const warning = this.#missedWarning(status.reconcile);
      if (warning) status.warnings.push(warning);
    }
    if (this.#error) status.error = this.#error;
    return status;
  }

  rescan(): Promise<void> {
    this.#rescan ??= (async () => {
      await this.#scanning?.catch(() => undefined);
      this.#rescan = null;
      if (this.#stopped) return;
      const progress: ScanProgress = { kind: 'catch-up', done: 0, total: 0, captured: 0, finished: false };
      this.#scan = progress;
      const watcher = this.#watcher;
      // Through the watcher when there is one, so directories the old ignore rules skipped get watched.
      const walk: Walk = watcher
        ? (onFile) => watcher.addTree('', onFile, { revisit: true })
        : plainWalk(this.#ctx.dir, (path) => this.#ctx.capture.isIgnored(path, true), this.#onBadName);
      const scanning = scanTree(this.#examineCtx, walk, progress);
      const current: Promise<void> = scanning.finally(() => {
        if (this.#scanning === current) this.#scanning = null;
      });
      this.#scanning = current;
      await scanning;
    })();
    return this.#rescan;
  }

  arrivals(): Promise<void> | null {
    return this.#arrivals.pending();
  }

  trackedFiles(): number {
    const now = Date.now();
    if (now - this.#tracked.at > TRACKED_TTL_MS) this.#tracked = { count: this.#ctx.state.index.count(this.#ctx.projectId), at: now };
    return this.#tracked.count;
  }
}
