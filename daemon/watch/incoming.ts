// Watch mode's incoming side: what the engine records without this directory — a snapshot or file
// restore, `strata put/rm/mv` through the API, another process on the same home, later a sync — read
// from the project's history (engine-feed.ts) and brought to disk path by path (materialize.ts):
// 100 ms after this process's engine announces a change, every poll interval for changes made by
// other processes, and at once after the start-up scan.
import { statfs } from 'node:fs/promises';
import { isNoRoom } from '../../engine/errors.js';
import { compareUtf8 } from '../../engine/paths.js';
import type { HostContext, IncomingStatus } from '../host.js';
import { EngineFeed } from './engine-feed.js';
import { type MaterializeResult, materialize } from './materialize.js';
import { moveOnDisk } from './moves-on-disk.js';
import { OpenDirs } from './open-dirs.js';
import type { OwnWrites } from './own-writes.js';

/** Paths brought to disk at once: each waits on a read of the store and a rename, not on the CPU. */
const MATERIALIZE_CONCURRENCY = 16;
/** After this process's engine changed the project, its history is read this much later. */
const NUDGE_MS = 100;
/** A path that failed is tried again after 0.5 s, 1 s, 2 s, …, then at least every FAILED_RETRY_CAP_MS. */
const RETRY_BASE_MS = 500;
/**
 * A path that keeps failing (a permission, an I/O error) is tried again at least this often, never
 * given up on: it used to be tried 8 times and then only when the project changed it again, so a
 * cause the user removed here (`chmod u+w dir`) left the file off disk and `sync wait` saying "could
 * not be written here" until the daemon restarted.
 */
const FAILED_RETRY_CAP_MS = 5 * 60_000;
/** A path that did not fit on the disk is tried again at least this often, however long it takes. */
const DISK_FULL_RETRY_CAP_MS = 10_000;
/**
 * A path skipped with a warning (something on disk in its way) is tried again at least this often,
 * however long it takes, and at once after this process's engine announces a change (a capture here
 * is what usually unblocks it).
 */
const SKIPPED_RETRY_CAP_MS = 30_000;

/** When a path that failed its `attempts`-th time is tried again: doubling from `baseMs`, at most `capMs` later. */
function retryDelay(attempts: number, capMs: number, baseMs = RETRY_BASE_MS): number {
  return Math.min(baseMs * 2 ** (Math.min(attempts, 20) - 1), capMs);
}

/** Paths read at a time from the engine and from the index when every path is compared. */
const PAGE = 1_000;

export interface IncomingDeps {
  host: HostContext;
  /** runs `task` after whatever else is under way on `path` (the watcher's examine of it) */
  withPath<T>(path: string, task: () => Promise<T>): Promise<T>;
  /** the scan under way, if any: local changes are versioned before anything is brought down */
  scanning(): Promise<void> | null;
  pollMs: number;
  /** told what each round writes, for the watcher (own-writes.ts) */
  own?: OwnWrites;
  /** RETRY_BASE_MS and FAILED_RETRY_CAP_MS, for tests that cannot wait minutes */
  retry?: { baseMs: number; failedCapMs: number };
}

export class IncomingChanges {
  readonly #deps: IncomingDeps;
  readonly #host: HostContext;
  readonly #feed: EngineFeed;
  #timer: NodeJS.Timeout | undefined;
  #dueAt = 0;
  /** a change was announced while a follow ran (it may have read the history before the change) */
  #nudged = false;
  /** a change was announced and no follow has started since (sync's "everything is here" waits for it) */
  #announced = false;
  #unsubscribe: (() => void) | undefined;
  #following: Promise<void> | null = null;
  #stopped = false;
  #applied = 0;
  #last: { path: string; result: MaterializeResult; at: string } | null = null;
  /**
   * Paths that failed (a full disk, a permission): the cursor moves on, so they are kept here and
   * tried again with a growing delay, instead of waiting for the next change of the path.
   */
  readonly #retry = new Map<string, { attempts: number; at: number }>();
  /**
   * Paths skipped with a warning: a directory in the way of a file with something in it not versioned
   * yet, a link on the way, a file that changed while it was versioned. Nothing is thrown, so they
   * were never tried again — the sync model's seed 5000 path 3: materialize met B's directory `a`
   * before B's capture of `a/b/a` (pending) had put it in the index, skipped the head's file `a`, and
   * it stayed skipped once the directory could go ("1 file … could not be written here" for good).
   * They are kept in #retry too, never given up on.
   */
  readonly #skipped = new Set<string>();
  /** paths the next round looks at whatever the feed says (bringAgain) */
  readonly #again = new Set<string>();
  /** per path, why it is not on disk as the project has it (shown in status until it is) */
  readonly #problems = new Map<string, string>();
  /** of those, the paths that did not fit on the disk (sync's verdict says "disk full") */
  readonly #noRoom = new Set<string>();
  /** the directory's free bytes when a path last did not fit (more since: room came back, retry now) */
  #freeAtNoRoom = 0;
  /**
   * This process has compared the whole engine with the index once (the first follow does). The
   * paths above live in memory only while the cursor moves past them: after a `kill -9` (or any
   * restart) nothing else remembers a file that did not fit on a full disk, and the directory kept
   * its old contents while sync said in sync (issue 38, the model's seed 39000). Until then the
   * directory counts as behind.
   */
  #compared = false;

  constructor(deps: IncomingDeps) {
    this.#deps = deps;
    this.#host = deps.host;
    this.#feed = new EngineFeed(deps.host);
  }

  start(): void {
    const { engine, projectId } = this.#host;
    this.#unsubscribe = engine.onFilesChanged((changed) => {
      if (changed === projectId) this.#nudge();
    });
    this.#scheduleFollow(0);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe?.();
    if (this.#timer) clearTimeout(this.#timer);
    await this.#following;
  }

  status(): IncomingStatus {
    const failed = this.#problems.keys().next();
    return {
      applied: this.#applied,
      last: this.#last,
      busy: this.#announced || this.#following !== null,
      notOnDisk: { count: this.#problems.size, example: failed.done ? null : failed.value, diskFull: this.#noRoom.size },
    };
  }

  /**
   * Whether the engine holds changes this directory does not show yet: a follow is due or under way,
   * or a record was committed after the position the feed last brought to disk (a follow skipped
   * while the delete guard is tripped, a daemon that stopped before it got there). A fact for sync's
   * verdict.
   */
  async behind(): Promise<boolean> {
    if (this.#announced || this.#following !== null || !this.#compared || this.#again.size > 0) return true;
    // A path that failed or was skipped once is tried again 0.5 s later before the verdict may call
    // it the user's to end: what was in its way is often gone by then (a directory emptied by the
    // same round's deletions; `sync wait` stopped with exit 4 half a second before the retry).
    for (const [path, retry] of this.#retry) if (retry.attempts === 1 && !this.#noRoom.has(path)) return true;
    // Room came back since a path did not fit: the next round (about a second away) tries it, so the
    // full disk is not the user's to end any more (the sync model's seed 44000 path 55: `sync wait`
    // stopped on "disk full" with the disk freed, a moment before the file came down).
    if (this.#noRoom.size > 0 && (await this.#freeBytes()) > this.#freeAtNoRoom) return true;
    return (await this.#feed.newest()) > (this.#feed.cursor ?? 0);
  }

  /** Free bytes of the directory's filesystem for this user (0 when it cannot be told). */
  async #freeBytes(): Promise<number> {
    try {
      const fs = await statfs(this.#host.dir);
      return fs.bavail * fs.bsize;
    } catch {
      return 0;
    }
  }

  /**
   * This directory versioned `path` (the watcher's capture of the user's own file): a path that could
   * not be written here is looked at in the next round, not at its retry, since what is on disk now is
   * the project's newest version of it (the feed leaves this process's own versions out, so nothing
   * else would tell this round about it).
   */
  capturedHere(path: string): void {
    const retry = this.#retry.get(path);
    if (retry === undefined) return;
    retry.at = 0;
    this.#nudge();
  }

  /** `path` is compared and brought to disk in the next round, whatever the feed says (examine.ts onConflictCopy). */
  bringAgain(path: string): void {
    this.#again.add(path);
    this.#nudge();
  }

  /** Paths not brought to disk, and why (at most a few, with the count of the rest). */
  warnings(): string[] {
    const shown = [...this.#problems.values()].slice(0, 5);
    if (this.#problems.size > shown.length) shown.push(`${this.#problems.size - shown.length} more path(s) could not be brought from the project to disk (see the log)`);
    return shown;
  }

  /**
   * This process's engine recorded something for the project: look within NUDGE_MS (a burst of
   * changes is read in one go). The poll stays for what other processes record.
   */
  #nudge(): void {
    this.#announced = true;
    if (this.#following !== null) this.#nudged = true;
    else if (this.#timer === undefined || this.#dueAt > Date.now() + NUDGE_MS) this.#scheduleFollow(NUDGE_MS);
  }

  #scheduleFollow(delayMs: number): void {
    if (this.#stopped) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#dueAt = Date.now() + delayMs;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#nudged = false;
      void this.follow().finally(() => this.#scheduleFollow(this.#nudged ? NUDGE_MS : this.#deps.pollMs));
    }, delayMs);
  }

  /**
   * Brings what the engine recorded since the last look to disk (or joins the run under way). Waits
   * for a scan under way: the scan first versions what changed here, so local edits are never taken
   * for stale copies. Paused while the mass-delete guard is tripped — files the guard keeps in the
   * engine are not to be written back into a directory that may be an unmounted drive.
   */
  follow(): Promise<void> {
    this.#following ??= (async () => {
      // Announced by this process's engine: often a capture here, which may have unblocked a skipped path.
      const announced = this.#announced;
      this.#announced = false;
      try {
        await this.#deps.scanning()?.catch(() => undefined);
        if (this.#stopped || this.#host.capture.stats().massDeleteGuard.tripped) return;
        const read = await this.#feed.read();
        // The first follow of a process compares everything (see #compared), whatever the cursor
        // says: a walk of two path-ordered lists, no stat, so cheap on 100,000 files.
        const paths = new Set(read.kind === 'paths' && this.#compared ? read.paths : await this.#everyPath());
        for (const path of this.#again) paths.add(path);
        this.#again.clear();
        const now = Date.now();
        const applied = this.#applied;
        if (paths.size > 0) {
          // Files moved elsewhere are renamed here, not written again (moves-on-disk.ts).
          const moved = await moveOnDisk(this.#host, [...paths], this.#deps.withPath);
          this.#applied += moved.size / 2;
          for (const path of moved) {
            this.#problems.delete(path);
            this.#retry.delete(path);
          }
          // Paths that failed before go one at a time, after the new ones (issue 38: two 15 MB files
          // retried together on a disk with 20 MB free failed together forever; one of them fits).
          await this.#materializeAll([...paths].filter((path) => !moved.has(path)));
        }
        // Room came back (this round removed files, or the disk has more free than at the failure):
        // what did not fit is tried now, not at its next retry (`sync wait` stops at a full disk).
        const roomBack = this.#noRoom.size > 0 && (await this.#freeBytes()) > this.#freeAtNoRoom;
        const due = (path: string, at: number) => at <= now || (roomBack && this.#noRoom.has(path)) || (announced && this.#skipped.has(path));
        const retries = [...this.#retry].filter(([path, retry]) => due(path, retry.at) && !paths.has(path)).map(([path]) => path);
        if (retries.length > 0) await this.#materializeEach(retries, 1, null);
        if (!this.#stopped) {
          this.#feed.save(read.newest);
          this.#compared = true;
        }
        if (paths.size > 0) this.#host.logger.debug({ paths: paths.size, applied: this.#applied - applied, ms: Date.now() - now }, 'brought project changes to disk');
      } catch (error) {
        if (!this.#stopped) this.#host.logger.warn({ err: (error as Error).message }, 'could not bring project changes to disk');
      } finally {
        this.#following = null;
      }
    })();
    return this.#following;
  }

  /**
   * No cursor (first start) or one out of reach: the paths where the engine and the index disagree —
   * a file of the engine whose version is not the one the index says was versioned here, or a path
   * only one side has. Both are read in path order a page at a time and merged, so neither is held
   * whole: loading every index row and listing the engine directory by directory took a daemon that
   * had just imported 200,000 files from 223 to ~390 MiB RSS (bench/watch-latency.ts).
   */
  async #everyPath(): Promise<string[]> {
    const { engine, projectId, state } = this.#host;
    const differ: string[] = [];
    const engineFiles = pages(async (cursor: string | undefined) => {
      const page = await engine.listFiles({ projectId, limit: PAGE, ...(cursor === undefined ? {} : { cursor }) });
      return { items: page.items, next: page.nextCursor };
    });
    const indexRows = pages(async (after: string | undefined) => {
      const items = state.index.versionsAfter(projectId, after ?? '', PAGE);
      return { items, next: items.length === PAGE ? items[items.length - 1]!.path : undefined };
    });
    let file = await engineFiles.next();
    let row = await indexRows.next();
    while (!file.done || !row.done) {
      const order = file.done ? 1 : row.done ? -1 : compareUtf8(file.value.path, row.value.path);
      if (order === 0) {
        // Already what the index says was versioned here: materialize() would find it 'same' anyway,
        // after a stat; this keeps a restart on 100,000 files to a walk of the two lists.
        if (file.value.versionId !== row.value.versionId) differ.push(file.value.path);
        file = await engineFiles.next();
        row = await indexRows.next();
      } else if (order < 0) {
        differ.push(file.value!.path);
        file = await engineFiles.next();
      } else {
        differ.push(row.value!.path);
        row = await indexRows.next();
      }
    }
    return differ;
  }

  async #materializeAll(paths: string[]): Promise<void> {
    // A file that became a directory, or the reverse, can only be written once its old self is gone,
    // which another path of the same batch does: what was in the way gets a second, sequential pass.
    const blocked: string[] = [];
    const full: string[] = [];
    await this.#materializeEach(paths, MATERIALIZE_CONCURRENCY, (path) => blocked.push(path), (path) => full.push(path));
    if (blocked.length > 0) await this.#materializeEach(blocked, 1, null);
    // Written side by side they did not fit; one at a time, some may (the rest waits for room).
    if (full.length > 0) await this.#materializeEach(full, 1, null);
  }

  /** `onNoRoom`: a path the disk had no room for is handed back (for a pass of its own) instead of scheduled for a retry. */
  async #materializeEach(paths: string[], concurrency: number, onBlocked: ((path: string) => void) | null, onNoRoom?: (path: string) => void): Promise<void> {
    const queue = [...paths];
    // Each directory is opened once for the round, not two or three times per path (open-dirs.ts).
    const dirs = new OpenDirs(this.#host.dir);
    const work = async () => {
      for (let path = queue.shift(); path !== undefined; path = queue.shift()) {
        if (this.#stopped) return;
        let blocked = false;
        let problem: string | null = null;
        const warn = (message: string) => {
          if (onBlocked === null) problem = message;
          else blocked = true;
        };
        try {
          const result = await this.#deps.withPath(path, () => materialize(this.#host, path, warn, dirs, this.#deps.own));
          const tried = this.#retry.get(path)?.attempts ?? 0;
          this.#retry.delete(path);
          this.#noRoom.delete(path);
          this.#skipped.delete(path);
          if (problem === null) this.#problems.delete(path);
          else {
            this.#problems.set(path, problem);
            // Tried again when what blocked it may have changed (see #skipped), never forgotten.
            this.#skipped.add(path);
            this.#retry.set(path, { attempts: tried + 1, at: Date.now() + retryDelay(tried + 1, SKIPPED_RETRY_CAP_MS) });
          }
          if (blocked) onBlocked!(path);
          else if (result !== 'same' && result !== 'skipped') {
            this.#applied += 1;
            this.#last = { path, result, at: new Date().toISOString() };
            this.#host.logger.debug({ path, result }, 'brought to disk');
          }
        } catch (error) {
          const full = isNoRoom(error);
          if (full && onNoRoom !== undefined) {
            onNoRoom(path);
            continue;
          }
          this.#skipped.delete(path);
          const attempts = (this.#retry.get(path)?.attempts ?? 0) + 1;
          // Never given up on: the retry that finds room again, or the cause gone, brings the file down.
          const timing = this.#deps.retry;
          const delay = retryDelay(attempts, full ? DISK_FULL_RETRY_CAP_MS : (timing?.failedCapMs ?? FAILED_RETRY_CAP_MS), timing?.baseMs);
          this.#retry.set(path, { attempts, at: Date.now() + delay });
          if (full) {
            this.#noRoom.add(path);
            this.#freeAtNoRoom = await this.#freeBytes();
          }
          else this.#noRoom.delete(path);
          this.#host.logger.warn({ path, attempts, err: (error as Error).message }, 'could not bring a path to disk');
          this.#problems.set(
            path,
            `could not bring ${JSON.stringify(path)} from the project to disk: ${(error as Error).message} (trying again${delay >= 60_000 ? ` every ${Math.round(delay / 60_000)} min` : ''})`,
          );
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, work));
    } finally {
      await dirs.close();
    }
  }
}

/** The items of a paged list, one at a time, a page read when the last one is used up. */
async function* pages<T, C>(read: (cursor: C | undefined) => Promise<{ items: T[]; next: C | undefined }>): AsyncGenerator<T> {
  let cursor: C | undefined;
  do {
    const page = await read(cursor);
    yield* page.items;
    cursor = page.next;
  } while (cursor !== undefined);
}
