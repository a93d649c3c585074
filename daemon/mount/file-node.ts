// The mount's view of one file that has local state: open, written, or waiting for its capture. Files
// without local state are not represented: the engine's current entry is the truth for them.
import type { ContentHash, Entry } from '../../engine/types.js';
import type { ContentReader } from './content-reader.js';
import { type FileTime, msTime } from './file-time.js';
import type { StagingFile } from './staging-file.js';

/** The engine version a node started from (or was last captured as). */
export interface BaseRef {
  versionId: string;
  hash: ContentHash;
  size: number;
  executable: boolean;
  /** a dataset: `hash` names its manifest, `size` is the assembled size */
  dataset: boolean;
  /** a symbolic link: the content is its target */
  symlink: boolean;
  /** the version's timestamp (ms), when known: the mtime a file shows without a kept time (times.ts) */
  atMs?: number;
}

export function baseOf(entry: Entry): BaseRef {
  return { versionId: entry.versionId, hash: entry.contentHash, size: entry.size, executable: entry.executable, dataset: entry.dataset, symlink: entry.symlink, atMs: Date.parse(entry.timestamp) };
}

/**
 * Where the current bytes are. `base`: unchanged since `node.base` (empty when there is no base).
 * `memory`: small files (≤ MEMORY_LIMIT) live in a buffer until captured — no staging file, no
 * syscalls, which is what makes unpacking thousands of small files fast. `staged`: a staging file.
 */
export type NodeContent = { kind: 'base' } | { kind: 'memory'; buf: Buffer } | { kind: 'staged'; file: StagingFile };

/** Small enough to stay in memory, and to go to the store's SQLite pack (its limit) when captured. */
export const MEMORY_LIMIT = 64 * 1024;

/** A removal the engine has not recorded yet (a tombstone in waiting), or the old name of a rename. */
export interface GoneMarker {
  kind: 'gone';
  /** a file renamed away: its new node, which records the rename in the engine (history stays findable) */
  movedTo: FileNode | null;
  /** a directory that vanished (rename or rmdir) while the engine still has files under it */
  dir: boolean;
  /**
   * the version the name showed when it was removed, when known: the deletion is of that one, and
   * gives way to a newer version made elsewhere meanwhile (sink.ts)
   */
  shown?: string;
  /**
   * A directory's marker set where a file's removal or move was still to be recorded (recording it
   * first failed: a rename refused until other records land): that file's marker. The directory's
   * marker ends only after it is recorded. Replaced outright, the file stayed in the engine for good
   * — every file later made below its name was refused, or kept as a conflict copy (fsstress).
   */
  replaced?: GoneMarker;
  /**
   * A directory's marker: names in a directory made again at its path whose files this mount recorded
   * while the marker stood. The marker hides the engine's listing there (what the old directory held),
   * but not these: hidden, a file made in the new directory vanished once recorded (lookups said
   * ENOENT, and `mkdir` took its name; fsstress).
   */
  shows?: Set<string>;
}

/** Whether `marker` is, or stands in for, `file`'s marker (GoneMarker.replaced). */
export function standsFor(marker: GoneMarker | undefined, file: GoneMarker): boolean {
  return marker !== undefined && (marker === file || marker.replaced === file);
}

export interface MappedReads {
  handles: Set<number>;
  unmap(fh: number): void;
}

export class FileNode {
  #base: BaseRef | null = null;
  #content: NodeContent = { kind: 'base' };
  /**
   * The handles whose reads of this node's stored content native/fuse serves (mapped-reads.ts). Any
   * change of `content` or `base` unmaps them: their next reads come to JS again.
   */
  mappedReads: MappedReads | null = null;
  /** the path of `base` in the engine; differs from `path` after a rename not yet recorded */
  enginePath: string | null;
  /** the gone marker left at `enginePath` by a rename; valid while that path still holds it */
  originMarker: GoneMarker | null = null;
  size: number;
  executable: boolean;
  /** a symbolic link (its bytes are the target, in memory): made by symlink(2), never opened or written */
  symlink: boolean;
  mtime: FileTime;
  /** set by utimensat; the mtime when undefined */
  atime: FileTime | undefined = undefined;
  ctime: FileTime;
  handles = 0;
  writers = 0;
  /**
   * Writers whose close(2) already returned (flush answered) but whose release has not arrived: FUSE
   * sends release asynchronously, so `echo v1 > a; echo v2 > a` opens again before the first release.
   */
  closedWriters = 0;
  #dirty = false;
  /** when the node last went from clean to dirty (ms): how long a held-open file's change has gone unversioned */
  dirtySinceMs = 0;
  /** bumped on every change, so a capture knows whether the node changed while it ran */
  generation = 0;
  /** unlinked, replaced or renamed to a `.fuse_hidden*` name: still readable by open handles, never captured */
  detached = false;
  /**
   * The engine's content changed behind this clean node (a restore) while a writer had it open: the
   * node stays for that writer (mount-state.ts onExternalChange) until it writes or closes.
   */
  superseded = false;
  /**
   * Closed contents a writer opened again before they were captured (Reconciler.freeze): each is a
   * version of its own, recorded in order before the node's current content. `journalAt`: the
   * journal's size once its close record was written (what its capture marks as recorded).
   */
  frozen: Array<{ bytes: Uint8Array; executable: boolean; journalAt: number }> = [];
  /** running capture, copy-on-write or spill; every operation on the node waits for it first */
  busy: Promise<void> | null = null;

  constructor(
    public path: string,
    base: BaseRef | null,
    nowMs: number,
    mtime?: FileTime,
  ) {
    this.base = base;
    this.enginePath = base === null ? null : path;
    this.size = base?.size ?? 0;
    this.executable = base?.executable ?? false;
    this.symlink = base?.symlink ?? false;
    this.ctime = msTime(nowMs);
    this.mtime = mtime ?? this.ctime;
  }

  /** A new versioned symbolic link: its target in memory, to be captured after the settle delay. */
  static link(path: string, target: Buffer, nowMs: number, mtime?: FileTime): FileNode {
    const node = new FileNode(path, null, nowMs, mtime);
    node.symlink = true;
    node.content = { kind: 'memory', buf: target };
    node.size = target.length;
    node.dirty = true;
    return node;
  }

  /** content or exec bit differs from base: needs a capture */
  get dirty(): boolean {
    return this.#dirty;
  }

  set dirty(value: boolean) {
    if (value && !this.#dirty) this.dirtySinceMs = Date.now();
    this.#dirty = value;
  }

  get base(): BaseRef | null {
    return this.#base;
  }

  set base(base: BaseRef | null) {
    this.#base = base;
    this.contentChanged();
  }

  get content(): NodeContent {
    return this.#content;
  }

  set content(content: NodeContent) {
    this.#content = content;
    this.contentChanged();
  }

  private contentChanged(): void {
    const mapped = this.mappedReads;
    this.mappedReads = null;
    if (mapped !== null) for (const fh of mapped.handles) mapped.unmap(fh);
  }

  touch(nowMs: number): void {
    this.mtime = this.ctime = msTime(nowMs);
    this.generation += 1;
  }

  /** Runs `fn` exclusively with respect to other busy sections of this node. */
  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    while (this.busy !== null) await this.busy;
    let release!: () => void;
    this.busy = new Promise<void>((resolve) => {
      release = resolve;
    });
    try {
      return await fn();
    } finally {
      this.busy = null;
      release();
    }
  }

  /** Waits until no busy section runs (reads do not need exclusivity, only a settled state). */
  async settled(): Promise<void> {
    while (this.busy !== null) await this.busy;
  }
}

/** An open file handle (the number the kernel passes back with every read/write). */
export interface Handle {
  id: number;
  /** a versioned file's node, or null for a backing (ignored) file */
  node: FileNode | null;
  /** backing files: the real descriptor */
  fd: number | null;
  writable: boolean;
  wrote: boolean;
  /** the application closed it (flush answered); counted in its node's closedWriters until release */
  closed: boolean;
  /**
   * reader of the node's base content for `readerHash`, opened on first read. A promise, so the
   * kernel's concurrent first reads of one handle share one open instead of racing to replace it.
   */
  reader: Promise<ContentReader> | null;
  readerHash: ContentHash | null;
  /** a virtual read-only file (.strata/project.json) */
  virtual: Buffer | null;
}
