// The versioned part of the mount's tree: the engine's current entries, overlaid with local state the
// engine has not recorded yet (files being written or waiting for capture, removals and renames in
// waiting, directories the engine cannot know because they hold no file).
//
// Directory listings are loaded from the engine lazily, one directory at a time, and then kept up to
// date by the mount's own operations. Changes made by others (a snapshot or file restore through the
// API, the CLI, another process on the same home) are picked up through the project's records in
// commit order (engine.syncOutbox): what was committed after the last position read is one indexed
// query, and each such record invalidates the listings of the directories it touched. A position, not
// the last record's id: retention may prune that record (a file over the size threshold keeps one
// version), and a poll that looked for it read the whole history as changes by others, dissolving
// every hard-link group on the way.
import type { Engine } from '../../engine/engine-api.js';
import type { Entry } from '../../engine/types.js';
import { StrataError } from '../../engine/errors.js';
import type { FileNode, GoneMarker } from './file-node.js';
import { type FileTime, msTime } from './file-time.js';
import type { DirTimes, MountTimes } from './times.js';
import { ancestorsOf, baseName, isWithin, parentOf } from './paths.js';

export type Kind = 'file' | 'dir';

export interface ExplicitDirStore {
  list(): string[];
  add(path: string): void;
  remove(path: string): void;
}

const FEED_PAGE = 500;
/**
 * Records a poll reads before it gives up and starts over from the engine (a resync). Lowered only
 * by tests, through STRATA_MOUNT_FEED_MAX (a resync is otherwise ten thousand commits away).
 */
const FEED_MAX = Number(process.env['STRATA_MOUNT_FEED_MAX'] ?? 10_000);
const BUSY_POLL_MS = 100;
/** How often the mount looks for changes committed by other processes (see start). */
export const EXTERNAL_POLL_MS = 1000;

export class Namespace {
  /** merged listings of loaded directories: name → kind */
  private readonly dirs = new Map<string, Map<string, Kind>>();
  /** bumped whenever a directory's entries change, so a load that raced a change is redone */
  private readonly epochs = new Map<string, number>();
  private readonly dirTimes: Map<string, DirTimes>;
  /** subdirectory counts of loaded listings, valid for the epoch they were counted at */
  private readonly subdirs = new Map<string, { epoch: number; count: number }>();
  readonly nodes = new Map<string, FileNode>();
  /**
   * Engine entries of files, as a lookup found them: a `git status` over 50,000 files asked the engine
   * 50,000 times a run. Forgotten whenever the path may have changed (the mount's own changes and
   * captures, external changes); `entryEpoch` moves on each forget, so an answer that raced one is
   * not kept.
   */
  private readonly entries = new Map<string, Entry>();
  entryEpoch = 0;
  readonly gone = new Map<string, GoneMarker>();
  readonly explicitDirs: Set<string>;
  /**
   * Files the engine has (pulled, restored) where this mount keeps a directory of its own that holds
   * something (fileReplacesEmptyDir): the mount shows the directory, so sync must not say in sync
   * while any is here (sync-verdict's WRITE_FAILED, as watch mode's in-the-way paths).
   */
  readonly hiddenFiles = new Set<string>();
  /** versions this mount committed: the change feed skips them */
  private readonly own = new Set<string>();
  /**
   * Unknown records of paths whose capture was still under way in the capture thread when a poll saw
   * them: the thread commits before its answer (with the version ids) reaches us, so such a record is
   * probably ours. Judged again at the next poll, once the path has no request in flight.
   */
  private deferred: Array<{ versionId: string; path: string; contentHash?: string | null }> = [];
  /** set by the mount when captures run in another thread (capture-thread.ts) */
  ownInFlight: (path: string) => boolean = () => false;
  /**
   * Set by the mount: true while a tool hammers it. Polls are then at most every BUSY_POLL_MS: each is
   * a history query on the thread that answers the kernel (~130 us; 100 a second were ~2% of an
   * untar), and a restore during such a storm may show a few tens of milliseconds later.
   */
  isBusy: () => boolean = () => false;
  /** Set by the mount: names of hard-linked files, listed before their first version (link-groups.ts). */
  linkedNames: () => Iterable<string> = () => [];
  /** Set by the mount: the unversioned (backing) directory at `dir` holds nothing but directories, if any. */
  onlyDirsUnversioned: (dir: string) => Promise<boolean> = async () => true;
  /**
   * Set by the mount: the unversioned (backing) directory at `dir` holds nothing, and is removed (true,
   * as when there is none); false when something is in it.
   */
  removeEmptyUnversioned: (dir: string) => Promise<boolean> = async () => true;
  /** Set by the mount: a directory of its own left the tree (its mode and owner go with it). */
  onDirDropped: (dir: string) => void = () => {};
  /** commit position of the newest record read */
  private lastSeq = 0;
  private lastPollMs = 0;
  private polling: Promise<void> | null = null;

  constructor(
    private readonly engine: Engine,
    private readonly projectId: string,
    private readonly dirStore: ExplicitDirStore,
    private readonly onExternalChange: (path: string) => void,
    private readonly now: () => number,
    /** where directories' times are kept across restarts (times.ts) */
    private readonly times: Pick<MountTimes, 'dirs' | 'setDir' | 'deleteDir'>,
    // One indexed query per poll; 10 ms keeps a restore through the API visible "at once" (the next
    // command after the API call) at a cost of at most 100 queries per second while the mount is busy.
    private readonly pollIntervalMs = 10,
  ) {
    this.explicitDirs = new Set(dirStore.list());
    this.dirTimes = new Map(times.dirs());
  }

  async start(): Promise<void> {
    this.lastSeq = await this.engine.feedPosition(this.projectId);
    this.lastPollMs = this.now();
    // A change made through this process's engine (a restore through the API, a sync pull) is looked
    // at right away, not at the next access: the kernel caches attributes for a second and would not
    // ask before then (onExternalChange tells it to forget them).
    this.unsubscribe = this.engine.onFilesChanged((projectId) => {
      if (projectId === this.projectId) this.pollSoon();
    });
    // A change committed by another process on the same home has no listener here: it is looked for
    // every second, so what the kernel and native/fuse keep (names, attributes) is dropped within a
    // second of it rather than when their lifetimes run out, and those can be long.
    this.ticker = setInterval(() => {
      if (this.now() - this.lastPollMs >= EXTERNAL_POLL_MS) this.pollSoon();
    }, EXTERNAL_POLL_MS);
    this.ticker.unref();
  }

  stop(): void {
    this.unsubscribe();
    if (this.ticker !== null) clearInterval(this.ticker);
    this.ticker = null;
  }

  private ticker: NodeJS.Timeout | null = null;

  private unsubscribe: () => void = () => {};
  /** Set by the mount: the engine changed more than a poll reads; every kernel cache must go. */
  onResync: () => void = () => {};
  /**
   * Set by the mount: what a resync does to each file with local state. Not every change a record
   * would mean: which paths changed is not known then (hard-link groups are judged on their content).
   */
  forgetNode: (path: string) => void = (path) => this.onExternalChange(path);
  private pollAgain = false;

  private pollSoon(): void {
    if (this.polling !== null) {
      this.pollAgain = true;
      return;
    }
    this.polling = this.poll()
      .catch(() => undefined)
      .finally(() => {
        this.lastPollMs = this.now();
        this.polling = null;
        if (this.pollAgain) {
          this.pollAgain = false;
          this.pollSoon();
        }
      });
  }

  /** The kind of a versioned path, or null. '' is the root. */
  async kindOf(path: string): Promise<Kind | null> {
    if (path === '') return 'dir';
    const listing = await this.listing(parentOf(path));
    return listing.get(baseName(path)) ?? null;
  }

  /** A loaded directory's merged entries (loads it on first use). Empty for a directory that does not exist. */
  async listing(dir: string): Promise<Map<string, Kind>> {
    await this.maybePoll();
    return this.listingAsPolled(dir);
  }

  /** listing() without the poll first: a poll's own work would wait for itself. */
  private async listingAsPolled(dir: string): Promise<Map<string, Kind>> {
    for (;;) {
      const cached = this.dirs.get(dir);
      if (cached !== undefined) return cached;
      const epoch = this.epochs.get(dir) ?? 0;
      const loaded = await this.load(dir);
      if ((this.epochs.get(dir) ?? 0) !== epoch) continue; // changed while loading: load again
      if (!this.dirs.has(dir)) this.dirs.set(dir, loaded);
    }
  }

  /** A directory created here starts loaded and empty: nothing to ask the engine. */
  markNewDir(dir: string): void {
    this.dirs.set(dir, new Map());
    this.dropDirTimes(dir); // a directory removed earlier at this name may have left its times behind
    this.entriesChanged(dir);
    this.bump(dir);
  }

  cachedEntry(path: string): Entry | undefined {
    return this.entries.get(path);
  }

  /** Keeps `entry` if nothing was forgotten since `epoch` (read before asking the engine). */
  rememberEntry(path: string, entry: Entry, epoch: number): void {
    if (epoch === this.entryEpoch) this.entries.set(path, entry);
  }

  forgetEntry(path: string): void {
    this.entries.delete(path);
    this.entryEpoch++;
  }

  setEntry(path: string, kind: Kind): void {
    this.forgetEntry(path);
    const parent = parentOf(path);
    const listing = this.dirs.get(parent);
    if (listing?.get(baseName(path)) !== kind) this.entriesChanged(parent);
    listing?.set(baseName(path), kind);
    this.bump(parent);
  }

  deleteEntry(path: string): void {
    this.forgetEntry(path);
    const parent = parentOf(path);
    this.dirs.get(parent)?.delete(baseName(path));
    this.entriesChanged(parent);
    this.bump(parent);
  }

  /**
   * A directory's times as the mount has changed them (undefined: never, it shows the mount's start):
   * its entries changed (mtime and ctime), or utimensat set them. Kept across restarts (times.ts).
   */
  dirTimesOf(dir: string): DirTimes | undefined {
    return this.dirTimes.get(dir);
  }

  /** utimensat on a directory; null keeps that time (the mount's start when never set). */
  setDirTimes(dir: string, atime: FileTime | null, mtime: FileTime | null, start: FileTime): void {
    const current = this.dirTimes.get(dir) ?? { atime: start, mtime: start, ctime: start };
    this.keepDirTimes(dir, { atime: atime ?? current.atime, mtime: mtime ?? current.mtime, ctime: msTime(this.now()) });
  }

  /**
   * A directory renamed from `from` to `to` keeps the times it had (`times`, read before the rename
   * changed them), as on any filesystem; the directory renamed itself (not one below it) gets a new ctime.
   */
  moveDirTimes(from: string, to: string, times: DirTimes | undefined, renamed: boolean): void {
    this.dropDirTimes(from);
    if (times === undefined) this.dropDirTimes(to);
    else this.keepDirTimes(to, renamed ? { ...times, ctime: msTime(this.now()) } : times);
  }

  /** The directory is gone: a directory made at its name later starts afresh. */
  dropDirTimes(dir: string): void {
    this.dirTimes.delete(dir);
    this.times.deleteDir(dir);
  }

  private keepDirTimes(dir: string, times: DirTimes): void {
    this.dirTimes.set(dir, times);
    this.times.setDir(dir, times);
  }

  /** Something the engine does not list changed in `dir` (a FIFO, socket or device node): its times. */
  touchDir(dir: string): void {
    this.entriesChanged(dir);
  }

  private entriesChanged(dir: string): void {
    const now = msTime(this.now());
    this.keepDirTimes(dir, { atime: this.dirTimes.get(dir)?.atime ?? now, mtime: now, ctime: now });
  }

  /** The directory's listing, and how many subdirectories it has (counted once per change of the listing). */
  async listingWithSubdirs(dir: string): Promise<{ listing: Map<string, Kind>; subdirs: number }> {
    const listing = await this.listing(dir);
    const epoch = this.epochs.get(dir) ?? 0;
    const cached = this.subdirs.get(dir);
    if (cached !== undefined && cached.epoch === epoch) return { listing, subdirs: cached.count };
    let count = 0;
    for (const kind of listing.values()) if (kind === 'dir') count++;
    this.subdirs.set(dir, { epoch, count });
    return { listing, subdirs: count };
  }

  /**
   * The node at `path` goes back to being the engine's file, which its directory's listing must then
   * show. A directory made again where an old one's marker still stands lists only what the mount
   * recorded there (GoneMarker.shows): without this, the file vanished once recorded — lookups said
   * ENOENT, `mkdir` took its name, and files made below that were refused for good (fsstress seed 3,
   * one worker). A listing being loaded meanwhile starts again (the epoch).
   */
  dropNode(path: string): void {
    this.nodes.delete(path);
    const parent = parentOf(path);
    const marker = this.gone.get(parent);
    if (marker?.dir === true) {
      marker.shows ??= new Set();
      marker.shows.add(baseName(path));
    }
    this.bump(parent);
  }

  /** Forget a directory's listing (and those of its subdirectories when `deep`). */
  invalidate(dir: string, deep = false): void {
    this.dirs.delete(dir);
    // Rare (a stale listing, an external change, a directory moved): every cached entry goes.
    this.entries.clear();
    this.entryEpoch++;
    this.entriesChanged(dir);
    this.bump(dir);
    if (!deep) return;
    const prefix = dir === '' ? '' : `${dir}/`;
    for (const key of [...this.dirs.keys()]) if (key.startsWith(prefix)) this.dirs.delete(key);
  }

  /**
   * The listing of `dir` is loaded again when next asked for, with no other change: a directory's
   * gone marker went, and the listing loaded while it stood left out every file the engine has there.
   */
  forgetListing(dir: string): void {
    this.dirs.delete(dir);
    this.bump(dir);
  }

  addExplicitDir(path: string): void {
    if (this.explicitDirs.has(path)) return;
    this.explicitDirs.add(path);
    this.dirStore.add(path);
  }

  removeExplicitDir(path: string): void {
    // The directory that kept the engine's file out of sight goes (rmdir, mv): the file shows.
    if (this.hiddenFiles.delete(path)) this.invalidate(parentOf(path));
    if (!this.explicitDirs.delete(path)) return;
    this.dirStore.remove(path);
  }

  noteOwnVersion(versionId: string): void {
    this.own.add(versionId);
  }

  /**
   * Whether the engine has records this mount has not looked at yet (sync's NOT_ON_DISK: a pulled file
   * is not what the mount shows until a poll has seen it; sync wait said in sync in between). Asks
   * for that poll too.
   */
  async behind(): Promise<boolean> {
    const newest = await this.engine.feedPosition(this.projectId);
    if (newest <= this.lastSeq && this.polling === null) return false;
    this.pollSoon();
    return true;
  }

  /** Picks up changes committed by others since the last look (at most every pollIntervalMs). */
  maybePoll(): Promise<void> {
    if (this.polling !== null) return this.polling;
    const since = this.now() - this.lastPollMs;
    if (since < this.pollIntervalMs || (since < BUSY_POLL_MS && this.isBusy())) return Promise.resolve();
    this.polling = this.poll().finally(() => {
      this.lastPollMs = this.now();
      this.polling = null;
    });
    return this.polling;
  }

  private async poll(): Promise<void> {
    const fresh: Array<{ versionId: string; path: string; contentHash?: string | null }> = [];
    let after = this.lastSeq;
    let complete = false;
    while (fresh.length < FEED_MAX) {
      // The common case, nothing new, is an index probe that finds no row.
      const limit = Math.min(FEED_PAGE, FEED_MAX - fresh.length + 1);
      const result = await this.engine.syncOutbox({ projectId: this.projectId, afterSeq: after, limit });
      for (const item of result.items) fresh.push(item.record);
      if (result.lastSeq !== null) after = result.lastSeq;
      if (result.items.length < limit) {
        complete = true;
        break;
      }
    }
    this.lastSeq = after;
    if (!complete) {
      // More changed than we are willing to read: start over from the engine, from its newest record.
      this.lastSeq = await this.engine.feedPosition(this.projectId);
      this.dirs.clear();
      this.entries.clear();
      this.entryEpoch++;
      this.own.clear();
      this.deferred = [];
      for (const path of this.nodes.keys()) this.forgetNode(path);
      this.onResync();
      // Which paths changed is not known: every file kept out of sight is looked at again.
      await this.settleHiddenFiles([...this.hiddenFiles]);
      return;
    }
    if (fresh.length === 0 && this.deferred.length === 0) return;
    const records = this.deferred.length === 0 ? fresh : [...this.deferred, ...fresh];
    this.deferred = [];
    const files = new Set<string>();
    const deleted = new Set<string>();
    const hiddenTouched = new Set<string>();
    for (const record of records) {
      // Before the own versions are skipped: this mount's removal of a file it hides, or a capture
      // below it, settles the file as much as a change from elsewhere does (see settleHiddenFiles).
      for (const path of this.hiddenFiles) if (isWithin(record.path, path)) hiddenTouched.add(path);
      if (this.own.delete(record.versionId)) continue;
      if (this.ownInFlight(record.path)) {
        this.deferred.push(record);
        continue;
      }
      if (record.contentHash != null) {
        files.add(record.path);
        await this.fileReplacesEmptyDir(record.path);
      } else {
        this.hiddenFiles.delete(record.path);
        deleted.add(record.path);
      }
      for (const dir of ancestorsOf(record.path)) this.invalidate(dir);
      this.onExternalChange(record.path);
    }
    this.dropDirsBelowFiles(files);
    await this.dropEmptiedDirs(deleted);
    await this.settleHiddenFiles(hiddenTouched);
  }

  /**
   * Files kept out of sight (hiddenFiles) that the engine no longer has as files at their path: the
   * mount shows what the project has there, and nothing is left unwritten. A deletion from elsewhere
   * is seen in the poll's loop; this mount's own changes are not (their records are skipped), and
   * those are what usually settles the path: the sync model's seed 47000 path 16, where A's edit of
   * `c/a` reached the engine after `rm c/a; mkdir c/a; echo v44 > c/a/a` here and before their
   * capture, whose removal then deleted A's file and whose `c/a/a` made `c/a` a directory. The file
   * stayed counted as not shown, and `sync wait` said "1 file … could not be written here" for good
   * while every disk was the server's head. Asked of the engine, as the records only hint at it.
   */
  private async settleHiddenFiles(paths: Iterable<string>): Promise<void> {
    for (const path of paths) {
      if (!this.hiddenFiles.has(path)) continue;
      const entry = await this.engine.stat({ projectId: this.projectId, path });
      if (entry === null && this.hiddenFiles.delete(path)) this.invalidate(parentOf(path));
    }
  }

  /**
   * Directories of this mount's own (`mkdir d` here) that deletions from elsewhere left with nothing
   * in them go, and so on up to the first directory that still holds something: watch mode removes
   * the directories an incoming deletion empties on disk (materialize.ts removeEmptyParents). Kept,
   * `d` stayed on the mount, empty, for good once another workstation's `rm -r d` came through, while
   * every other workstation had no `d`. A directory holding anything stays: a file or a subdirectory
   * (one made here and never filled, as rmdir on a disk would fail), something the mount has not
   * recorded yet, or anything unversioned in its backing directory (an editor's swap file).
   */
  private async dropEmptiedDirs(deleted: ReadonlySet<string>): Promise<void> {
    if (deleted.size === 0 || this.explicitDirs.size === 0) return;
    const looked = new Set<string>();
    for (const path of deleted) {
      const above = ancestorsOf(path).filter((dir) => dir !== '');
      // Only up to this mount's own directories: the engine's go by themselves with their last file.
      const highest = above.findLastIndex((dir) => this.explicitDirs.has(dir));
      for (const dir of above.slice(0, highest + 1)) {
        if (looked.has(dir)) break;
        looked.add(dir);
        if (!(await this.emptied(dir))) break;
        if (!this.explicitDirs.has(dir)) continue;
        this.removeExplicitDir(dir);
        this.dirs.delete(dir);
        this.deleteEntry(dir);
        this.onDirDropped(dir);
        // The kernel forgets the name (the record's change dropped only the listings above it).
        this.onExternalChange(dir);
      }
    }
  }

  /** Nothing is in the directory at `dir`, versioned or not (its empty backing directory is removed). */
  private async emptied(dir: string): Promise<boolean> {
    const holds = async () => (await this.listingAsPolled(dir)).size > 0 || this.holdsFileBelow(dir);
    if (await holds()) return false;
    if (!(await this.removeEmptyUnversioned(dir))) return false;
    // The mount may have changed while the backing directory was looked at.
    return !(await holds());
  }

  /**
   * Directories made here below a versioned directory that gave way to a file in the engine (sync's
   * makeWayAbove, once the mount said it may: MountedProject.mayReplaceDirectory). They went with
   * it; kept, they showed again, empty, once the path was a directory again (`a/a` after seed
   * 42000's `a` came back as a directory). An explicit directory at the file's path itself is
   * fileReplacesEmptyDir's: kept, it keeps what is below it. One pass over the explicit directories
   * per poll, not one per record.
   */
  private dropDirsBelowFiles(files: ReadonlySet<string>): void {
    if (files.size === 0 || this.explicitDirs.size === 0) return;
    for (const dir of [...this.explicitDirs]) {
      const above = ancestorsOf(dir).find((path) => files.has(path));
      if (above === undefined || this.explicitDirs.has(above)) continue;
      this.removeExplicitDir(dir);
      this.dirs.delete(dir);
    }
  }

  /**
   * A file another workstation wrote where this mount keeps an empty directory of its own (`mkdir d`
   * here, a file `d` there): the directory held no data, so the file takes its place, as watch mode
   * does on disk (watch/in-the-way.ts). Kept, the mount showed the directory while the engine had the
   * file and sync said "in sync" (the sync model's seeds 1000, 1001). "Empty" is nothing but
   * directories, nested ones too (`mkdir -p d/a/b`: seed 42001 kept `d/a/b` and hid the file `d` the
   * same way). A file below (local state, a linked name, an unversioned file in the backing
   * directory) keeps the directory.
   */
  async fileReplacesEmptyDir(path: string): Promise<void> {
    if (!this.explicitDirs.has(path)) return;
    const kept = this.holdsFileBelow(path) || !(await this.onlyDirsUnversioned(path));
    // The mount may have changed while the backing directory was read.
    if (!this.explicitDirs.has(path)) return;
    if (kept || this.holdsFileBelow(path)) {
      this.hiddenFiles.add(path);
      return;
    }
    for (const dir of [...this.explicitDirs]) {
      if (dir !== path && !isWithin(dir, path)) continue;
      this.removeExplicitDir(dir);
      this.dirs.delete(dir);
    }
    this.invalidate(path, true);
  }

  /**
   * Something below `path` the engine has not recorded: a file written, waiting for its capture or
   * renamed (a node that is not clean, as MountState.onExternalChange judges it), a removal in
   * waiting, a hard-linked name: the first such name, or null. A clean node (a file open for reading)
   * holds the engine's bytes.
   */
  unrecordedBelow(path: string): string | null {
    for (const [name, node] of this.nodes) {
      if (name === path || !isWithin(name, path) || node.detached) continue;
      if (node.dirty || node.busy !== null || node.originMarker !== null || node.enginePath !== name) return name;
    }
    for (const names of [this.gone.keys(), this.linkedNames()]) for (const name of names) if (name !== path && isWithin(name, path)) return name;
    return null;
  }

  /** Something below `path` the mount holds that is not a directory (pending state or a name). */
  private holdsFileBelow(path: string): boolean {
    for (const names of [this.nodes.keys(), this.gone.keys(), this.linkedNames()]) for (const name of names) if (name !== path && isWithin(name, path)) return true;
    for (const [dir, listing] of this.dirs) {
      if (dir !== path && !isWithin(dir, path)) continue;
      for (const kind of listing.values()) if (kind === 'file') return true;
    }
    return false;
  }

  private async load(dir: string): Promise<Map<string, Kind>> {
    const map = new Map<string, Kind>();
    const marker = this.gone.get(dir);
    const hidden = marker?.dir === true;
    const shows = hidden ? marker.shows : undefined;
    if (!hidden || shows !== undefined) {
      try {
        const listing = await this.engine.listDirectory({ projectId: this.projectId, path: dir });
        for (const item of listing.items) {
          // Below a directory's marker, only what this mount recorded in the directory made since.
          if (hidden && !shows!.has(item.name)) continue;
          // A marker hides what was removed here. A directory's marker never hides a file the engine
          // has at its name: the file came after the directory (pulled, or kept out of sight by a
          // directory of this mount's that was then moved away) and must show.
          const marker = this.gone.get(item.path);
          // A directory's marker standing in for a file's removal (GoneMarker.replaced) hides that file.
          if (marker !== undefined && !(marker.dir && marker.replaced === undefined && item.type !== 'directory')) continue;
          map.set(item.name, item.type === 'directory' ? 'dir' : 'file');
        }
      } catch (error) {
        // A directory with no file in the engine (new, emptied, or a file's path): nothing from there.
        if (!(error instanceof StrataError && (error.code === 'PATH_NOT_FOUND' || error.code === 'INVALID_ARGUMENT'))) throw error;
      }
    }
    const prefix = dir === '' ? '' : `${dir}/`;
    for (const names of [this.nodes.keys(), this.linkedNames()]) {
      for (const path of names) if (path.startsWith(prefix) && !path.slice(prefix.length).includes('/')) map.set(path.slice(prefix.length), 'file');
    }
    for (const path of this.explicitDirs) {
      if (path.startsWith(prefix) && path !== dir && !path.slice(prefix.length).includes('/')) map.set(path.slice(prefix.length), 'dir');
    }
    return map;
  }

  private bump(dir: string): void {
    this.epochs.set(dir, (this.epochs.get(dir) ?? 0) + 1);
  }
}
