// The capture pipeline both modes feed (contract in daemon/host.ts). It turns "this file is complete",
// "this path is gone" and "this was renamed" into engine calls, in order per path, with bounded
// concurrency, and owns what the modes share: skip unchanged content, ignore rules, the mass-delete
// guard, and the bookkeeping `strata status` shows.

import type { Logger } from 'pino';
import type { Engine, WriteInput, WriteResult } from '../../engine/engine-api.js';
import { isStrataError } from '../../engine/errors.js';
import type { Actor } from '../../engine/types.js';
import type { CaptureOutcome, CapturePipeline, CaptureStats } from '../host.js';
import type { DaemonState } from '../state.js';
import { CaptureQueue } from './capture-queue.js';
import { conflictCopyFor, freeConflictCopy as freeCopyName, keptAsConflictCopy, treeRefusal } from './conflict-copy.js';
import { RenameBatch } from './rename-batch.js';
import { type GuardState, MassDeleteGuard } from './guard.js';
import { countYoung } from './young-files.js';
import type { IgnoreRules } from './ignore.js';
import { openNoFollow } from './open-no-follow.js';

export interface PipelineOptions {
  engine: Engine;
  projectId: string;
  actor: Actor;
  logger: Logger;
  ignore: IgnoreRules;
  state: DaemonState;
  /** files the project tracks now (for the guard) */
  tracked: () => number;
  /** how long deletions wait so the guard sees a mass deletion whole (default 500 ms) */
  deleteSettleMs?: number;
  /**
   * Watch mode: a held path captured again is a file that came back, and leaves the guard's count. In
   * mount mode a held deletion was refused and the file never left: it stays counted.
   */
  releaseHeldOnCapture?: boolean;
  /**
   * The version a deletion of `path` deletes (watch mode: the one its index row says the disk had).
   * When the engine has moved on since (a sync, the API), the deletion gives way. Undefined: the current.
   */
  deleteBase?: (path: string) => string | undefined;
  /**
   * A synced watch project (issue 14): a write is based on the version the disk had (its index row;
   * null: none). When the engine has moved on since — another workstation's change pulled meanwhile —
   * the edit is kept as a conflict copy next to the file (`fit (conflict ws 2026-11-25 1632).m`),
   * or at the path itself when the other side deleted it (an edit beats a deletion).
   */
  conflictCopies?: { workstation: string; writeBase: (path: string) => string | null };
  /**
   * A watch project without sync: a write is based on the version the disk had (its index row). When
   * the engine moved on since with a restore made after the edit (`strata restore` while the edit
   * waited out its settle delay), the edit is versioned and the restore put back on top, as
   * materialize.ts does for edits it finds: the disk ends with what the user restored, both are in
   * history. Any other change since (an older restore, a write) lets the edit simply be the newest.
   */
  restoreWins?: { writeBase: (path: string) => string | null };
  /**
   * Watch mode: files that appeared and are not examined yet (null: none; else a promise of the next
   * progress). Pending deletions wait for them before the guard counts them: a directory renamed
   * within the project is a rename of each file, found file by file (watch/arrivals.ts).
   */
  arrivals?: () => Promise<void> | null;
  /** engine writes in flight at once (default 128) */
  maxInFlight?: number;
  now?: () => number;
}

const GUARD_FLAG = 'massDeleteGuard';
/** errors a project keeps for `strata status` (the oldest go first) */
export const MAX_CAPTURE_ERRORS = 20;
/**
 * Own version ids kept for watch mode's engine feed (watch/engine-feed.ts), which asks about them
 * ~100 ms after they are made, or once a scan ends. 100,000 of them held ~20 MiB after a large import,
 * whose ids the feed never asks about (it compares the whole tree instead).
 */
const MAX_OWN_VERSIONS = 10_000;
const MAX_NOT_KEPT = 10_000;
const GUARD_RESET_GRACE_MS = 30_000;
/** Deletions wait at most this long for files that are arriving (see PipelineOptions.arrivals). */
const ARRIVALS_MAX_WAIT_MS = 60_000;
/** A steady trickle of deletions still commits at least this often. */
const DELETE_MAX_WAIT_FACTOR = 4;

export interface PipelineHandle extends CapturePipeline {
  /** stops timers; pending deletions are committed first (unless guarded) */
  close(): Promise<void>;
}

export function createCapturePipeline(options: PipelineOptions): PipelineHandle {
  const { engine, projectId, actor, logger, ignore, state } = options;
  const now = options.now ?? Date.now;
  const deleteSettleMs = options.deleteSettleMs ?? 500;
  // Wide enough that the engine's commit batches and the store's group commits fill up: at 16 a
  // slow fsync (a busy disk) capped watch mode at ~400 versions/s; small files are ≤ 64 KiB each.
  const maxInFlight = options.maxInFlight ?? 128;
  const guard = new MassDeleteGuard(state.flags.get<GuardState>(projectId, GUARD_FLAG));
  const chains = new Map<string, Promise<unknown>>();
  const pendingDeletes = new Map<string, Array<(outcome: CaptureOutcome) => void>>();
  let deleteTimer: NodeJS.Timeout | undefined;
  let firstPendingAt = 0;
  let inFlight = 0;
  const waiting = new CaptureQueue();
  const ownVersions = new Set<string>();
  const renames = new RenameBatch(engine, projectId, actor);
  const stats: CaptureStats = { pending: 0, captured: 0, lastVersion: null, errors: [], massDeleteGuard: guard.state, historyNotKept: { count: 0, example: null } };

  const persistGuard = () => state.flags.set(projectId, GUARD_FLAG, guard.state);
  /** Holds these paths' deletions back (each path counts once, however often it is seen missing). */
  const hold = (paths: string[]) => {
    guard.setMissing(state.heldDeletes.add(projectId, paths));
    persistGuard();
    stats.massDeleteGuard = guard.state;
  };
  /** A held path holds a file again: it is no longer missing. */
  const release = (path: string) => {
    if (options.releaseHeldOnCapture !== true || guard.state.missing === 0) return;
    guard.setMissing(state.heldDeletes.remove(projectId, path));
    persistGuard();
    stats.massDeleteGuard = guard.state;
  };

  /** Runs `task` after every earlier task on the same path. */
  function serial<T>(path: string, task: () => Promise<T>): Promise<T> {
    const previous = chains.get(path) ?? Promise.resolve();
    const next = previous.then(task, task);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    chains.set(path, settled);
    void settled.then(() => {
      if (chains.get(path) === settled) chains.delete(path);
    });
    return next;
  }

  /** `changedAt`: the file's ctime in µs, when there is a file (see capture-queue.ts). */
  async function limited<T>(task: () => Promise<T>, changedAt = 0): Promise<T> {
    stats.pending += 1;
    if (inFlight >= maxInFlight) await waiting.wait(changedAt);
    inFlight += 1;
    try {
      return await task();
    } finally {
      inFlight -= 1;
      stats.pending -= 1;
      waiting.release();
    }
  }

  function failed(path: string | null, error: unknown): CaptureOutcome {
    const code = isStrataError(error) ? error.code : ((error as NodeJS.ErrnoException).code ?? 'INTERNAL');
    const message = error instanceof Error ? error.message : String(error);
    stats.errors.push({ time: new Date(now()).toISOString(), path, code, message });
    if (stats.errors.length > MAX_CAPTURE_ERRORS) stats.errors.shift();
    logger.warn({ path, code, err: message }, 'capture failed');
    return { kind: 'failed', code, message };
  }

  function forgetErrors(path: string): void {
    for (let i = stats.errors.length - 1; i >= 0; i--) if (stats.errors[i]!.path === path) stats.errors.splice(i, 1);
  }

  function recorded(outcome: Extract<CaptureOutcome, { kind: 'versioned' }>): CaptureOutcome {
    stats.captured += 1;
    const { version } = outcome;
    // Our own versions are what the disk holds already: the engine feed leaves them out. A conflict
    // copy is not: its content is at the copy's path in the engine only, and the feed must bring it
    // to disk (a left-out copy stayed missing from this workstation's directory for good).
    if (outcome.conflictCopy === undefined) ownVersions.add(version.versionId);
    // Bounded: an id the feed never asks about (it read the record before we got here) must not stay
    // forever. Forgetting one only costs the feed a stat comparison.
    while (ownVersions.size > MAX_OWN_VERSIONS) ownVersions.delete(ownVersions.values().next().value!);
    stats.lastVersion = { path: version.path, versionId: version.versionId, kind: version.kind, timestamp: version.timestamp };
    // The path's earlier failures are over (a full disk with room again): `strata status` listed them
    // long after the file was versioned.
    forgetErrors(version.path);
    // Logged once durable: bench/watch-latency.ts measures close-to-durable latency from these lines.
    logger.debug({ path: version.path, versionId: version.versionId, kind: version.kind }, 'versioned');
    return outcome;
  }

  /**
   * The size policy keeps only this path's current content: said once per path in the log, and in
   * `strata status` (count and an example) for as long as the daemon runs.
   */
  const notKept = new Set<string>();
  function noteHistoryNotKept(path: string, size: number): void {
    if (notKept.size >= MAX_NOT_KEPT || notKept.has(path)) return;
    notKept.add(path);
    stats.historyNotKept = { count: notKept.size, example: stats.historyNotKept.example ?? { path, size } };
    logger.warn({ path, size }, 'the size policy keeps only the current content of this file: its older versions are not kept (strata policy)');
  }

  /** A write or rename of `path` supersedes a deletion still waiting to commit. */
  function cancelDelete(path: string): void {
    const waiters = pendingDeletes.get(path);
    if (waiters === undefined) return;
    pendingDeletes.delete(path);
    for (const resolve of waiters) resolve({ kind: 'absent' });
  }

  /** Takes `path`'s deletion waiting to commit out of the queue, its waiters unanswered (a rename settles them). */
  function takeDelete(path: string): Array<(outcome: CaptureOutcome) => void> {
    const waiters = pendingDeletes.get(path) ?? [];
    pendingDeletes.delete(path);
    return waiters;
  }

  /** Queues `path`'s deletion again for `waiters` (taken out by a rename that did not happen), as captureDelete would. */
  function requeueDelete(path: string, waiters: Array<(outcome: CaptureOutcome) => void>): void {
    if (waiters.length === 0) return;
    if (guard.tripped) {
      hold([path]);
      for (const resolve of waiters) resolve({ kind: 'guarded' });
      return;
    }
    const queued = pendingDeletes.get(path);
    if (queued !== undefined) {
      queued.push(...waiters);
      return;
    }
    if (pendingDeletes.size === 0) firstPendingAt = now();
    pendingDeletes.set(path, waiters);
    scheduleDeleteFlush();
  }

  function holdPendingDeletes(): void {
    const held = [...pendingDeletes];
    pendingDeletes.clear();
    hold(held.map(([path]) => path));
    for (const [, waiters] of held) for (const resolve of waiters) resolve({ kind: 'guarded' });
  }

  function scheduleDeleteFlush(): void {
    if (deleteTimer !== undefined) clearTimeout(deleteTimer);
    const waited = now() - firstPendingAt;
    const delay = Math.max(0, Math.min(deleteSettleMs, deleteSettleMs * DELETE_MAX_WAIT_FACTOR - waited));
    deleteTimer = setTimeout(() => {
      deleteTimer = undefined;
      void flushDeletes();
    }, delay);
  }

  async function deleteNow(path: string): Promise<CaptureOutcome> {
    return serial(path, () =>
      limited(async () => {
        try {
          const baseVersionId = options.deleteBase?.(path);
          const { version } = await engine.deleteFile({ projectId, path, actor, ...(baseVersionId === undefined ? {} : { baseVersionId }) });
          return recorded({ kind: 'versioned', version, entry: null });
        } catch (error) {
          if (isStrataError(error, 'STALE_BASE_VERSION')) {
            // The file changed elsewhere (a sync from another workstation, the API) after this
            // directory last had it: the deletion was of an older state and gives way.
            logger.info({ path }, 'a deletion gave way to a newer version of the file made elsewhere; the file is brought back');
            return { kind: 'absent' } as const;
          }
          if (isStrataError(error, 'PATH_NOT_FOUND') || isStrataError(error, 'PATH_IS_DIRECTORY')) return { kind: 'absent' } as const;
          return failed(path, error);
        }
      }),
    );
  }

  async function flushDeletes(): Promise<void> {
    if (deleteTimer !== undefined) {
      clearTimeout(deleteTimer);
      deleteTimer = undefined;
    }
    // Counted here, not when each deletion arrived: by now the deletions that were really the first
    // half of a rename (`mv dir elsewhere-in-the-project`) have been cancelled by it — once the files
    // that arrived meanwhile have been looked at (a 2,000-file directory took longer than the settle
    // delay, and its own `mv` tripped the guard: issue 38 item 1).
    if (pendingDeletes.size > 0 && options.arrivals !== undefined) {
      const until = now() + ARRIVALS_MAX_WAIT_MS;
      for (let arriving = options.arrivals(); arriving !== null && now() < until; arriving = options.arrivals()) await arriving;
    }
    // Files made in the last hour never count (young-files.ts), looked up only for a burst that would trip it.
    let counted = pendingDeletes.size;
    if (counted > 0 && guard.wouldTrip(counted, now(), options.tracked())) counted -= await countYoung(engine, projectId, [...pendingDeletes.keys()], now());
    if (pendingDeletes.size > 0 && guard.note(counted, now(), options.tracked())) {
      logger.error(
        { since: guard.state.since, pending: pendingDeletes.size },
        'MASS DELETE GUARD TRIPPED: many tracked files vanished at once; deletions are no longer recorded for this project (all data is kept). Check the directory, then run `strata guard reset`.',
      );
      holdPendingDeletes();
      stats.massDeleteGuard = guard.state;
      return;
    }
    const batch = [...pendingDeletes];
    pendingDeletes.clear();
    await Promise.all(
      batch.map(async ([path, waiters]) => {
        const outcome = await deleteNow(path);
        for (const resolve of waiters) resolve(outcome);
      }),
    );
  }

  /**
   * Records the deletion of `path`, a file the engine has where the disk now has a directory (a file
   * below it was just read), as the user's own: on the version this directory last had, so a file
   * changed elsewhere meanwhile is not deleted (false: the caller keeps a conflict copy). Its deletion
   * waiting to settle is settled by this one; with the guard tripped nothing is deleted here.
   *
   * A synced directory that never had that file (no index row: pulled, not brought to disk yet) has
   * no deletion of it to record: it is a change made elsewhere, and the file below goes below a
   * conflict copy. Without a base the deletion took whatever was current: a workstation bringing
   * another's `rm -r a; echo v > a` to disk, with a file below its directory `a` captured meanwhile,
   * deleted the other's file `a` everywhere (the sync model's seed 42000, C running).
   */
  async function deleteFileAbove(path: string): Promise<boolean> {
    if (guard.tripped || ignore.ignores(path)) return false;
    const baseVersionId = options.deleteBase?.(path);
    if (baseVersionId === undefined && options.conflictCopies !== undefined) return false;
    let outcome: CaptureOutcome;
    try {
      const { version } = await engine.deleteFile({ projectId, path, actor, ...(baseVersionId === undefined ? {} : { baseVersionId }) });
      outcome = recorded({ kind: 'versioned', version, entry: null });
    } catch (error) {
      // Deleted meanwhile (by a sync): nothing is in the way any more.
      if (isStrataError(error, 'PATH_NOT_FOUND')) return true;
      if (isStrataError(error, 'STALE_BASE_VERSION') || isStrataError(error, 'PATH_IS_DIRECTORY')) return false;
      throw error;
    }
    const waiters = pendingDeletes.get(path);
    pendingDeletes.delete(path);
    for (const resolve of waiters ?? []) resolve(outcome);
    return true;
  }

  const freeConflictCopy = (path: string, workstation: string) => freeCopyName(engine, projectId, path, workstation, now());

  /**
   * One write of `path`'s new content (ifChanged: the same content and flags are no version), based on
   * the version the disk had when the pipeline keeps conflict copies.
   */
  async function writeContent(path: string, content: WriteInput['content'], flags: { executable: boolean; symlink: boolean }, editedAtMs?: number): Promise<CaptureOutcome> {
    const write = (at: string, baseVersionId?: string | null) =>
      engine.writeFile({
        projectId,
        path: at,
        actor,
        content,
        executable: flags.executable,
        ...(flags.symlink ? { symlink: true } : {}),
        ifChanged: true,
        ...(baseVersionId === undefined ? {} : { baseVersionId }),
      });
    const copies = options.conflictCopies;
    const restoreWins = options.restoreWins;
    const base = copies?.writeBase(path) ?? (editedAtMs === undefined ? undefined : restoreWins?.writeBase(path));
    const outcomeOf = (result: WriteResult): CaptureOutcome => {
      if (result.unchanged === true) return { kind: 'unchanged', entry: result.entry };
      if (result.historyKept === false) noteHistoryNotKept(path, result.version.size);
      return recorded({ kind: 'versioned', version: result.version, entry: result.entry });
    };
    /**
     * The project's tree refused the content at `path` (a directory there, a file above it:
     * conflict-copy.ts): a synced project keeps it as a conflict copy. Without sync, or for any other
     * error, the error is thrown.
     */
    const keepAsCopy = async (error: unknown): Promise<CaptureOutcome> => {
      const refusal = treeRefusal(path, error);
      if (copies === undefined || refusal === null) throw error;
      // A directory there (the sync model's defect 4, seed 4000): this directory replaced the
      // directory `c` by a file while the project got files below `c` from elsewhere (pulled, or
      // written through the API) that were never on this disk; the deletions of the ones it had
      // gave way, and the file could not be versioned at all ('c' is a directory): it was on no
      // version anywhere, and `c/a` could not be brought to disk. A file above (seed 5000): `rm b;
      // mkdir b; echo x > b/a` here while the project's `b` changed elsewhere — the deletion of `b`
      // gave way, and `b/a` could not be versioned below the file. Either way the file is kept as
      // a conflict copy (conflict-copy.ts), and what is on disk then makes way for the project's
      // tree (in-the-way.ts).
      const copy = await conflictCopyFor(engine, projectId, path, refusal, copies.workstation, now());
      const result = await write(copy, null);
      logger.warn({ path, copy }, keptAsConflictCopy(refusal));
      // The path's earlier failures are over: its content is versioned, at the copy.
      forgetErrors(path);
      if (result.unchanged === true) return { kind: 'unchanged', entry: result.entry };
      return recorded({ kind: 'versioned', version: result.version, entry: result.entry, conflictCopy: copy });
    };
    /**
     * A write at `path` after a first refusal: the tree may refuse it too (a change from elsewhere
     * pulled meanwhile). A refusal of the tree does not change by itself: thrown, it failed the
     * capture at every look, for good, and sync never ended (seed 46003 path 17, below).
     */
    const writeAtPath = async (baseVersionId: string | null | undefined): Promise<CaptureOutcome> => {
      let result: WriteResult;
      try {
        result = await write(path, baseVersionId);
      } catch (error) {
        return keepAsCopy(error);
      }
      return outcomeOf(result);
    };
    let result: WriteResult;
    try {
      result = await write(path, base);
    } catch (error) {
      const refusal = treeRefusal(path, error);
      if (refusal?.kind === 'file-above' && (await deleteFileAbove(refusal.above))) {
        // The file above is gone from this disk (a file is below its name now) and its deletion was
        // this directory's own, not yet recorded: the catch-up scan after a restart versions what it
        // finds before it looks for what vanished, and a live deletion waits out its settle delay.
        // Recorded first, the file goes where the user put it (seed 39002 of the sync model: `rm b;
        // mkdir b; echo v5 > b/a` while the daemon was dead went below a conflict copy of `b` that
        // no one else had changed, and `b/a` itself was on no version while the disk said in sync).
        return writeAtPath(base);
      }
      if (refusal !== null) return keepAsCopy(error);
      if (!isStrataError(error, 'STALE_BASE_VERSION')) throw error;
      if (copies === undefined) {
        if (restoreWins === undefined || editedAtMs === undefined) throw error;
        return writeUnderRestore(path, () => write(path), editedAtMs);
      }
      // Deleted elsewhere: an edit beats a deletion, at its own path — where the project's tree may
      // refuse it by now (seed 46003 path 17 of the sync model: A's `b/a` made way for B's file `b`,
      // a deletion recorded as pulled, and A appended to it before its directory gave way; the write
      // below the file `b` was refused (PATH_EXISTS) at every look, and sync never ended).
      if ((await engine.stat({ projectId, path })) === null) return writeAtPath(null);
      const copy = await freeConflictCopy(path, copies.workstation);
      result = await write(copy, null);
      logger.warn({ path, copy }, 'this edit was made on a version changed elsewhere meanwhile: it is kept as a conflict copy');
      if (result.unchanged === true) return { kind: 'unchanged', entry: result.entry };
      return recorded({ kind: 'versioned', version: result.version, entry: result.entry, conflictCopy: copy });
    }
    return outcomeOf(result);
  }

  /** The restoreWins rule (PipelineOptions) for an edit whose base the engine moved on from. */
  async function writeUnderRestore(path: string, write: () => ReturnType<Engine['writeFile']>, editedAtMs: number): Promise<CaptureOutcome> {
    const current = await engine.stat({ projectId, path });
    const result = await write();
    if (result.unchanged === true) return { kind: 'unchanged', entry: result.entry };
    if (result.historyKept === false) noteHistoryNotKept(path, result.version.size);
    const outcome = recorded({ kind: 'versioned', version: result.version, entry: result.entry });
    if (current === null) return outcome;
    const moved = await engine.getVersion(projectId, current.versionId).catch(() => null);
    if (moved?.kind !== 'restore' || Date.parse(moved.timestamp) <= editedAtMs) return outcome;
    await engine.restoreVersion({ projectId, versionId: moved.versionId, actor });
    logger.info({ path }, 'an edit made before a restore was versioned, and the restore put back on top');
    return outcome;
  }

  const pipeline: PipelineHandle = {
    isIgnored: (path, dir) => ignore.ignores(path, dir),

    captureFile({ path, file, executable, changedAt }) {
      if (ignore.ignores(path)) return Promise.resolve({ kind: 'ignored' });
      cancelDelete(path);
      release(path);
      return serial(path, () =>
        limited(async (): Promise<CaptureOutcome> => {
          try {
            // Never through a link (open-no-follow.ts): a link there now is captured as a link by its own event.
            const opened = await openNoFollow(file);
            if (opened === null) return { kind: 'absent' };
            try {
              // The size lets the engine store a large file as a dataset (shards) without a whole copy
              // first; the handle, a small file read without a second open and close (issue 38).
              return await writeContent(path, { file: opened.path, size: opened.size, handle: opened.handle }, { executable, symlink: false }, opened.mtimeMs);
            } finally {
              await opened.handle.close();
            }
          } catch (error) {
            // Gone (or turned into a directory) before we read it: its delete event follows.
            const code = (error as NodeJS.ErrnoException).code;
            if (code === 'ENOENT' || code === 'EISDIR' || code === 'ENOTDIR') return { kind: 'absent' };
            return failed(path, error);
          }
        }, changedAt),
      );
    },

    captureLink({ path, target, changedAt }) {
      if (ignore.ignores(path)) return Promise.resolve({ kind: 'ignored' });
      cancelDelete(path);
      release(path);
      return serial(path, () =>
        limited(async (): Promise<CaptureOutcome> => {
          try {
            return await writeContent(path, target, { executable: false, symlink: true });
          } catch (error) {
            return failed(path, error);
          }
        }, changedAt),
      );
    },

    captureDelete(path) {
      if (ignore.ignores(path)) return Promise.resolve({ kind: 'ignored' });
      if (guard.tripped) {
        hold([path]);
        return Promise.resolve({ kind: 'guarded' });
      }
      return new Promise<CaptureOutcome>((resolve) => {
        const waiters = pendingDeletes.get(path);
        if (waiters !== undefined) {
          waiters.push(resolve);
          return;
        }
        if (pendingDeletes.size === 0) firstPendingAt = now();
        pendingDeletes.set(path, [resolve]);
        scheduleDeleteFlush();
      });
    },

    captureRename(from, to) {
      if (ignore.ignores(to)) return pipeline.captureDelete(from);
      // The old name's deletion waiting to commit is the rename's first half: out of the queue now
      // (the guard does not count it), answered once the rename is done. Answered 'absent' up front,
      // it was dropped with the old name's index row even when the rename was then refused (a file
      // above the new name from elsewhere): the file stayed in the project, gone from this disk with
      // nothing left to bring it back, and sync said in sync (the sync model's seed 45000 path 3:
      // `mv a b/a/a` while the project had another workstation's file `b/a`).
      const fromDeletion = takeDelete(from);
      const answer = (outcome: CaptureOutcome) => {
        for (const resolve of fromDeletion.splice(0)) resolve(outcome);
      };
      cancelDelete(to);
      release(to);
      // Lock both paths, always in the same order, so two crossing renames cannot deadlock.
      const [first, second] = from < to ? [from, to] : [to, from];
      const renamed = serial(first, () =>
        serial(second, () =>
          limited(async (): Promise<CaptureOutcome> => {
            try {
              const { deleted, created } = await renames.rename(from, to);
              // The old name's tombstone is this directory's own doing too: the engine feed leaves it
              // out (a 2,000-file directory rename had the feed stat 2,000 old names for nothing).
              ownVersions.add(deleted.versionId);
              answer({ kind: 'absent' });
              return recorded({ kind: 'versioned', version: created.version, entry: created.entry });
            } catch (error) {
              // The engine has no file at the old name any more: there is nothing left to delete.
              if (isStrataError(error, 'PATH_NOT_FOUND')) {
                answer({ kind: 'absent' });
                return { kind: 'absent' };
              }
              // Nothing was renamed: the old name is still gone from disk, and its deletion is recorded as one.
              requeueDelete(from, fromDeletion.splice(0));
              return failed(to, error);
            }
          }),
        ),
      );
      // However the rename ended (a throw before its task ran), the deletion is never left unanswered.
      const leftOver = () => requeueDelete(from, fromDeletion.splice(0));
      void renamed.then(leftOver, leftOver);
      return renamed;
    },

    admitDelete(path) {
      if (guard.tripped) {
        hold([path]);
        return false;
      }
      if (!guard.note(1, now(), options.tracked())) return true;
      logger.error(
        { since: guard.state.since, path },
        'MASS DELETE GUARD TRIPPED: many tracked files were deleted through the mount at once; further deletions are refused (EPERM) and every file is kept. Check what is deleting them, then run `strata guard reset`.',
      );
      hold([path]);
      return false;
    },

    takeOwnVersion: (versionId) => ownVersions.delete(versionId),

    async flush() {
      for (;;) {
        if (pendingDeletes.size > 0) await flushDeletes();
        const running = [...chains.values()];
        if (running.length === 0 && pendingDeletes.size === 0) return;
        await Promise.all(running);
      }
    },

    stats: () => ({
      ...stats,
      pending: stats.pending + pendingDeletes.size,
      errors: [...stats.errors],
      massDeleteGuard: guard.state,
    }),

    resetGuard() {
      guard.reset(now(), GUARD_RESET_GRACE_MS);
      state.heldDeletes.clear(projectId);
      persistGuard();
      stats.massDeleteGuard = guard.state;
      logger.info('mass delete guard reset');
    },

    async close() {
      if (!guard.tripped) await pipeline.flush();
      else {
        holdPendingDeletes();
        await pipeline.flush();
      }
      if (deleteTimer !== undefined) clearTimeout(deleteTimer);
    },
  };
  return pipeline;
}
