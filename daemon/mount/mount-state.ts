// Everything one mounted project's operations share, and how a path resolves: versioned (local
// state first, then the engine), the virtual `.strata/` directory, then the backing directory for
// ignored and unstorable names.
import type { BigIntStats } from 'node:fs';
import type { Logger } from 'pino';
import type { Engine } from '../../engine/engine-api.js';
import { isTempName } from '../capture/temp-names.js';
import { STRATA_GITIGNORE_TEXT } from '../projects.js';
import type { ContentStore } from '../../engine/ports/content-store.js';
import type { Entry } from '../../engine/types.js';
import type { MountAttrs, PathAttrs } from './attrs.js';
import { type Backing, BLOCK_SIZE } from './backing.js';
import { EMPTY_READER, type ReadSource } from './content-reader.js';
import { baseOf, FileNode, type Handle, standsFor } from './file-node.js';
import { type FileTime, msTime } from './file-time.js';
import type { JournalRecord, MountJournal } from './journal.js';
import { SparseBlocks } from './sparse.js';
import type { LinkGroups } from './link-groups.js';
import type { ContentMaps } from './mapped-reads.js';
import type { FuseStat } from './fuse-binding.js';
import type { Namespace } from './namespace.js';
import { holdBase } from './node-content.js';
import { baseName, isFuseHidden, isVersionable, isWithin, parentOf } from './paths.js';
import { MountTimes } from './times.js';
import type { Reconciler } from './reconciler.js';
import type { MountSink } from './sink.js';
import type { StagingPool } from './staging-pool.js';

export const VIRTUAL_DIR = '.strata';
const ACTIVITY_WINDOW_MS = 100;
/** ~2,000 requests/s: a tree being unpacked or copied, not an editor saving. */
const BUSY_OPS = 200;
export const VIRTUAL_FILE = '.strata/project.json';
/** `.strata/.gitignore` (`*`), as in watch mode (daemon/projects.ts): git leaves `.strata/` alone. */
export const VIRTUAL_GITIGNORE = '.strata/.gitignore';
const GITIGNORE_DATA = Buffer.from(STRATA_GITIGNORE_TEXT);

export type Resolved =
  | { kind: 'dir'; versioned: boolean }
  | { kind: 'node'; node: FileNode }
  | { kind: 'entry'; entry: Entry }
  | { kind: 'backing-file'; stat: BigIntStats }
  | { kind: 'virtual-dir' }
  | { kind: 'virtual-file'; data: Buffer };

export interface MountStateDeps {
  engine: Engine;
  projectId: string;
  store: ContentStore | null;
  ns: Namespace;
  backing: Backing;
  pool: StagingPool;
  sink: MountSink;
  journal: MountJournal;
  /** modes and owners of versioned files and directories (attrs.ts) */
  attrs: MountAttrs;
  /** hard links among versioned files (link-groups.ts) */
  links: LinkGroups;
  /** times of versioned files other than their versions' timestamps (times.ts; default: in memory) */
  times?: MountTimes;
  /** blocks of sparse contents (sparse.ts; default: in memory) */
  sparse?: SparseBlocks;
  logger: Logger;
  /** names conflict copies of files the project's tree refuses (reconciler.ts) */
  workstation?: string;
  isIgnored(path: string, dir: boolean): boolean;
  projectJson: Buffer;
  uid: number;
  gid: number;
  now(): number;
}

export class MountState {
  readonly engine: Engine;
  readonly projectId: string;
  readonly ns: Namespace;
  readonly backing: Backing;
  readonly pool: StagingPool;
  readonly sink: MountSink;
  readonly journal: MountJournal;
  readonly attrs: MountAttrs;
  readonly links: LinkGroups;
  readonly logger: Logger;
  readonly workstation: string;
  readonly source: ReadSource;
  readonly handles = new Map<number, Handle>();
  /** directories that exist only in the backing directory (found or created there) */
  readonly backingDirs = new Set<string>();
  /** times of files without local state (utimens, an import, a node gone idle), valid while the version is current */
  readonly times: MountTimes;
  /** st_blocks of contents written with holes (sparse.ts) */
  readonly sparse: SparseBlocks;
  reconciler!: Reconciler;
  /** kernel requests answered in the current and the previous activity window */
  private opsNow = 0;
  private opsBefore = 0;
  private windowStart = 0;
  /** called after the mount recorded a version of `path` */
  onCaptured: (path: string) => void = () => {};
  /**
   * Asked before an unlink of a tracked file (the host wires in the mass-delete guard); false refuses
   * it with EPERM. Set by the host right after start.
   */
  admitDelete: (path: string) => Promise<boolean> | boolean = () => true;
  private nextHandle = 1;
  /** when the mount started: a directory's times until it changes */
  readonly start: FileTime;

  constructor(private readonly deps: MountStateDeps) {
    this.engine = deps.engine;
    this.projectId = deps.projectId;
    this.ns = deps.ns;
    this.backing = deps.backing;
    this.pool = deps.pool;
    this.sink = forgettingSink(deps.sink, (path) => this.ns.forgetEntry(path));
    this.journal = deps.journal;
    this.attrs = deps.attrs;
    this.links = deps.links;
    this.times = deps.times ?? new MountTimes(null);
    this.sparse = deps.sparse ?? new SparseBlocks(null);
    this.logger = deps.logger;
    this.workstation = deps.workstation ?? 'mount';
    this.source = { engine: deps.engine, projectId: deps.projectId, store: deps.store };
    this.start = msTime(deps.now());
  }

  now(): number {
    return this.deps.now();
  }

  /** Counts a kernel request (cheap: called for every operation). */
  noteOp(now: number): void {
    if (now - this.windowStart >= ACTIVITY_WINDOW_MS) {
      this.opsBefore = now - this.windowStart >= 2 * ACTIVITY_WINDOW_MS ? 0 : this.opsNow;
      this.opsNow = 0;
      this.windowStart = now;
    }
    this.opsNow += 1;
  }

  /** A tool is hammering the mount right now (more than BUSY_OPS requests in the last window). */
  isBusy(now: number): boolean {
    if (now - this.windowStart >= 2 * ACTIVITY_WINDOW_MS) return false;
    const recent = now - this.windowStart >= ACTIVITY_WINDOW_MS ? this.opsNow : Math.max(this.opsNow, this.opsBefore);
    return recent > BUSY_OPS;
  }

  /** A file with a temp-file name that was never versioned: its capture waits longer (reconciler.ts). */
  isHeldTemp(path: string): boolean {
    if (!isTempName(path)) return false;
    const node = this.ns.nodes.get(path);
    return node !== undefined && !node.detached && node.enginePath === null;
  }

  isIgnored(path: string, dir: boolean): boolean {
    return this.deps.isIgnored(path, dir);
  }

  /**
   * Names the engine cannot store (a backslash or control character, a name over 255 bytes, Unicode
   * not in NFC) still work through the mount, as plain files in the backing directory, but get no
   * history: logged (the first 20) and counted in `strata status`, never silently.
   */
  readonly unversionable = { count: 0, example: null as string | null };

  noteIfUnversionable(path: string, parentVersioned: boolean): void {
    if (!parentVersioned || isVersionable(path) || isFuseHidden(path)) return;
    this.unversionable.count += 1;
    this.unversionable.example ??= path;
    // The first ones are enough to see what happens; status keeps counting.
    if (this.unversionable.count <= 20) this.logger.warn({ path }, 'mount: a name Strata cannot version; kept as a plain file without history');
  }

  /** Paths that go to the backing directory when created, and are looked up there. */
  backingCandidate(path: string, dir?: boolean): boolean {
    if (!isVersionable(path) || isFuseHidden(path) || this.backingDirs.has(parentOf(path))) return true;
    return dir === undefined ? this.isIgnored(path, false) || this.isIgnored(path, true) : this.isIgnored(path, dir);
  }

  async resolve(path: string): Promise<Resolved | null> {
    if (path === '') return { kind: 'dir', versioned: true };
    if (path === VIRTUAL_DIR) return { kind: 'virtual-dir' };
    if (path === VIRTUAL_FILE) return { kind: 'virtual-file', data: this.deps.projectJson };
    if (path === VIRTUAL_GITIGNORE) return { kind: 'virtual-file', data: GITIGNORE_DATA };
    if (isWithin(path, VIRTUAL_DIR)) return null;
    // Every name of a hard-linked file is its primary name's file (link-groups.ts).
    const asked = path;
    if (!this.links.empty) path = this.links.primaryOf(path);
    const node = this.ns.nodes.get(path);
    if (node !== undefined) return { kind: 'node', node };
    if (isVersionable(path) && !this.backingDirs.has(parentOf(path))) {
      const kind = await this.ns.kindOf(path);
      if (kind === 'dir') return { kind: 'dir', versioned: true };
      if (kind === 'file') {
        const raced = this.ns.nodes.get(path);
        if (raced !== undefined) return { kind: 'node', node: raced };
        const epoch = this.ns.entryEpoch;
        const entry = this.ns.cachedEntry(path) ?? (await this.engine.stat({ projectId: this.projectId, path }));
        if (entry !== null) {
          this.ns.rememberEntry(path, entry, epoch);
          return { kind: 'entry', entry };
        }
        // The listing was stale. (Dropping the kernel's copy of it here too, for the names fsstress
        // finds listed that lstat cannot find, also dropped the directory's entries below it: a
        // hard-linked name whose group had just dissolved came back as a new inode; mount-hardlinks.)
        this.ns.invalidate(parentOf(path));
        // A hard-linked file whose primary name is no file any more (a restore removed it behind the
        // mount while the group's names stood at paths the engine did not have yet): the name leaves
        // its group, and the next one stands for the file. Left, the group's names were listed and
        // none could be looked up (fsstress, four workers, restores in the middle).
        if (this.links.primaryOf(path) === path && this.links.has(path) && this.ns.nodes.get(path) === undefined) {
          this.splitOff(path);
          return this.resolve(asked);
        }
      }
      if (kind === null && (await this.keepsUnversioned(path))) return { kind: 'dir', versioned: true };
    }
    if (this.backingCandidate(path) || this.attrs.isSpecial(path)) {
      const stat = await this.backing.stat(path);
      if (stat !== null) {
        if (!stat.isDirectory()) return { kind: 'backing-file', stat };
        this.backingDirs.add(path);
        return { kind: 'dir', versioned: false };
      }
    }
    return null;
  }

  /**
   * A directory the engine no longer has whose backing directory holds unversioned entries (`c/.a.swp`
   * when another workstation's `rm -r c` arrived): the directory stays, as watch mode leaves it on disk
   * and as keepParent keeps one whose last file goes through the mount. Found at its first lookup, it
   * becomes a directory of the mount's own. Unkept, readdir listed `c` (the backing directory's name)
   * while lookup found nothing, and the swap file was out of reach. The backing directory's
   * subdirectories are remembered (Backing.subdirNames): a name looked up in vain costs no syscall.
   */
  private async keepsUnversioned(path: string): Promise<boolean> {
    // An ignored directory (`node_modules/`) is the backing directory's own: looked up below.
    if (this.backingCandidate(path, true)) return false;
    const parent = parentOf(path);
    if (!(await this.backing.subdirNames(parent)).includes(baseName(path))) return false;
    if (parent !== '' && (await this.ns.kindOf(parent)) !== 'dir') return false;
    // The mount may have changed while the backing directory was read.
    if ((await this.ns.kindOf(path)) !== null) return false;
    this.ns.addExplicitDir(path);
    this.ns.setEntry(path, 'dir');
    return true;
  }

  /** `path` is a file of its own now (it changed behind the mount): it leaves its hard-link group. */
  splitOff(path: string): void {
    const { links } = this;
    if (links.empty || !links.has(path)) return;
    const wasPrimary = links.primaryOf(path) === path;
    const primary = links.remove(path);
    // The others keep the modes; their node (if any) stays with the changed name, which its own change wins over.
    if (wasPrimary && primary !== null) this.attrs.set(primary, 'file', false, this.attrs.of(path, 'file', false));
  }

  /**
   * Someone else changed `path` in the engine (a restore, the API). A clean node there is an old view:
   * detach it, so the next open sees the new content (handles open now keep the old bytes, as after a
   * rename over an open file). Local changes not yet captured win over the remote change, and so do
   * those of a process that still has the file open for writing: a detached node's writes are never
   * captured, so an appender's bytes after a restore were answered and lost. Its node stays, marked
   * `superseded`: what it writes is versioned over the change; closed unchanged, it goes then.
   */
  onExternalChange(path: string): void {
    const node = this.ns.nodes.get(path);
    const clean = node !== undefined && !node.dirty && node.busy === null && node.originMarker === null && node.enginePath === path;
    // Every handle open for writing counts, closed (flushed) or not: a flush is a close(2) of one
    // descriptor, and a dup of it may write on (`exec 3<>c` in bash closes the descriptor it opened
    // after dup2). Counted as closed, the node was detached and the writes after the restore went
    // into it, answered and in no version (issue 39 item 2). A writer that really closed is released
    // a moment later, and then the restore shows (ops-open.ts release).
    const writing = node !== undefined && node.writers > 0;
    const detach = clean && !writing;
    if (detach) this.detach(node);
    else if (clean) node.superseded = true;
    this.times.delete(path);
    this.ns.forgetEntry(path);
    this.onCaptured(path);
    // Handles still open on the detached node read the old bytes into the kernel's page cache of the
    // inode, which new opens keep (keep_cache): the path needs an inode of its own then.
    this.forgetInKernel(path, detach && node.handles > 0);
  }

  /**
   * Set by the mount once FUSE is up: drops what the kernel cached about `path` (its attributes, pages,
   * name); with `renumber`, its next lookup gets a new inode (open handles keep the old one).
   */
  forgetInKernel: (path: string, renumber?: boolean) => void = () => {};

  /** Set by the mount once FUSE is up: handles whose reads native/fuse serves (mapped-reads.ts). */
  contentMaps: ContentMaps | null = null;

  /**
   * A closed node waiting for its capture is journaled, so a crash in the settle delay loses nothing:
   * small files' bytes go to the mount's log, large ones get a record next to their staging file.
   * False when a small file's bytes could not be logged (a full disk): they are in memory only.
   * `open`: a writer still has it (an fsync mid-write): a restart after a crash versions it as
   * recovered, as it does a staging file still being written.
   */
  async logNode(node: FileNode, open = false): Promise<boolean> {
    if (node.detached || !node.dirty) return true;
    const content = node.content;
    if (content.kind === 'memory') {
      const record: JournalRecord = { op: 'w', path: node.path, exec: node.executable, size: node.size, ...(node.symlink ? { link: true as const } : {}), ...(open ? { open: true as const } : {}) };
      return this.journal.append(record, content.buf.subarray(0, node.size));
    }
    if (content.kind === 'staged') await this.journalStaged(node, false, open);
    return true;
  }

  /**
   * A staged node's journal record follows it (recovery versions the file under this path). `open`: a
   * writer still has it (an fsync mid-write): the record keeps saying so, or a crash before the close
   * recovered a file caught mid-write as an ordinary version, without the recovered mark and warning.
   */
  journalStaged(node: FileNode, durable: boolean, open = false): Promise<void> {
    if (node.content.kind !== 'staged' || node.detached) return Promise.resolve();
    this.journal.append({ op: 's', path: node.path });
    return node.content.file.journal({ projectId: this.projectId, path: node.path, executable: node.executable, ...(open ? { open: true as const } : {}) }, durable);
  }

  /** The node for a versioned file, created from its engine entry when it has no local state yet. */
  nodeFor(path: string, resolved: { kind: 'node'; node: FileNode } | { kind: 'entry'; entry: Entry }): FileNode {
    if (resolved.kind === 'node') return resolved.node;
    const existing = this.ns.nodes.get(path);
    if (existing !== undefined) return existing;
    const { entry } = resolved;
    const times = this.timesOf(path, entry);
    const node = new FileNode(path, baseOf(entry), this.now(), times.mtime);
    node.atime = times.atime;
    node.ctime = times.ctime;
    this.ns.nodes.set(path, node);
    return node;
  }

  /**
   * A file's times: those kept for its version (times.ts), else its version's timestamp. ctime is when
   * the mount last changed its attributes (chown, utimensat), else the mtime; atime, when not set,
   * is left to the caller (the mtime).
   */
  timesOf(path: string, entry: Entry): { mtime: FileTime; ctime: FileTime; atime: FileTime | undefined } {
    const kept = this.times.get(path, entry.versionId);
    const mtime = kept?.mtime ?? msTime(Date.parse(entry.timestamp));
    return { mtime, ctime: kept?.ctime ?? mtime, atime: kept?.atime };
  }

  /**
   * The mtime and atime `stat` in the mount shows for a versioned file or link, with the content they
   * go with: an in-place mount's write-back gives the directory's file the same times (make and rsync
   * compare them). Null: not a versioned file, or one with changes not captured.
   */
  async shownTimes(path: string): Promise<{ contentHash: string; mtime: FileTime; atime: FileTime } | null> {
    const resolved = await this.resolve(path);
    if (resolved?.kind === 'node') {
      const { node } = resolved;
      if (node.dirty || node.detached || node.base === null) return null;
      return { contentHash: node.base.hash, mtime: node.mtime, atime: node.atime ?? node.mtime };
    }
    if (resolved?.kind !== 'entry') return null;
    const times = this.timesOf(path, resolved.entry); // as getattr (ops-attr.ts) answers
    return { contentHash: resolved.entry.contentHash, mtime: times.mtime, atime: times.atime ?? times.mtime };
  }

  /** Sets times of a file without local state (null or absent keeps one); its ctime becomes now. */
  touchEntry(path: string, entry: Entry, times: { mtime?: FileTime | null; atime?: FileTime | null } = {}): void {
    const current = this.timesOf(path, entry);
    const mtime = times.mtime ?? current.mtime;
    const atime = times.atime ?? current.atime;
    this.times.set(path, { versionId: entry.versionId, mtime, atime, ctime: msTime(this.now()) }, Date.parse(entry.timestamp));
  }

  /** The node leaves the tree (unlinked or replaced): open handles keep reading it; never captured. */
  detach(node: FileNode): void {
    if (this.ns.nodes.get(node.path) === node) this.ns.nodes.delete(node.path);
    node.detached = true;
    this.dropOrigin(node);
    if (node.handles === 0) void this.discardContent(node);
    else holdBase(this, node);
  }

  /** The node no longer records a rename from its engine name: that old name is a plain removal now. */
  dropOrigin(node: FileNode): void {
    const origin = node.originMarker;
    node.originMarker = null;
    if (origin !== null && node.enginePath !== null && standsFor(this.ns.gone.get(node.enginePath), origin)) this.reconciler.schedule(node.enginePath);
  }

  async discardContent(node: FileNode): Promise<void> {
    const content = node.content;
    node.content = { kind: 'base' };
    if (content.kind === 'staged') await content.file.discard();
  }

  /** A clean, closed node with nothing pending goes back to being just an engine entry. */
  dropIfIdle(node: FileNode): void {
    if (node.handles > 0 || node.dirty || node.busy !== null || node.originMarker !== null) return;
    if (node.detached) {
      void this.discardContent(node);
      return;
    }
    if (this.ns.nodes.get(node.path) !== node || node.enginePath !== node.path || node.base === null) return;
    if (this.reconciler.hasTimer(node.path)) return;
    this.times.set(node.path, { versionId: node.base.versionId, mtime: node.mtime, atime: node.atime, ctime: node.ctime }, node.base.atMs);
    this.ns.dropNode(node.path);
    // A removal's marker stood under it (Reconciler.reconcile says how): it runs now that the path has no node.
    if (this.ns.gone.has(node.path)) this.reconciler.schedule(node.path);
  }

  newHandle(fields: Omit<Handle, 'id' | 'reader' | 'readerHash' | 'wrote' | 'closed'>): Handle {
    // fh 0 means "none" to the binding: start at 1.
    const handle: Handle = { ...fields, id: this.nextHandle++, reader: null, readerHash: null, wrote: false, closed: false };
    if (this.nextHandle > 0x7fffffff) this.nextHandle = 1;
    this.handles.set(handle.id, handle);
    return handle;
  }

  async closeReader(handle: Handle): Promise<void> {
    const reader = handle.reader;
    handle.reader = null;
    handle.readerHash = null;
    if (reader === null) return;
    const opened = await reader.catch(() => null);
    if (opened !== null && opened !== EMPTY_READER) await opened.close();
  }

  /** A versioned file's attributes; `attrs` from MountAttrs (else the defaults: 0644/0755, the mount's owner). */
  fileStat(size: number, executable: boolean, mtime: FileTime, ctime = mtime, attrs?: PathAttrs, atime = mtime): FuseStat {
    return {
      mode: 0o100000 | (attrs?.perm ?? (executable ? 0o755 : 0o644)),
      uid: attrs?.uid ?? this.deps.uid,
      gid: attrs?.gid ?? this.deps.gid,
      size,
      nlink: 1,
      blksize: BLOCK_SIZE,
      blocks: Math.ceil(size / 512),
      atime,
      mtime,
      ctime,
    };
  }

  /**
   * A versioned directory: nlink counts its subdirectories (versioned, backing, and `.strata/` in the
   * root); its times are those the mount gave it (entries changed, utimensat), else the mount's start.
   */
  async versionedDirStat(path: string): Promise<FuseStat> {
    const { listing, subdirs: versioned } = await this.ns.listingWithSubdirs(path);
    let subdirs = versioned + (path === '' ? 1 : 0);
    for (const name of await this.backing.subdirNames(path)) if (listing.get(name) !== 'dir') subdirs++;
    const times = this.ns.dirTimesOf(path);
    const attrs = this.attrs.of(path, 'dir');
    const stat = { ...this.dirStat(), mode: 0o040000 | attrs.perm, uid: attrs.uid, gid: attrs.gid, nlink: 2 + subdirs };
    if (times !== undefined) Object.assign(stat, { atime: times.atime, mtime: times.mtime, ctime: times.ctime });
    return stat;
  }

  dirStat(writable = true): FuseStat {
    return {
      mode: 0o040000 | (writable ? 0o755 : 0o555),
      uid: this.deps.uid,
      gid: this.deps.gid,
      size: 4096,
      nlink: 2,
      blksize: BLOCK_SIZE,
      blocks: 8,
      atime: this.start,
      mtime: this.start,
      ctime: this.start,
    };
  }
}


/**
 * The sink, telling the namespace to forget its copy of a path's entry once the engine changed it (a
 * capture, a removal, a rename): Namespace.cachedEntry never serves an entry the mount replaced.
 */
function forgettingSink(sink: MountSink, forget: (path: string) => void): MountSink {
  return {
    write: (path, content, executable, symlink) => sink.write(path, content, executable, symlink).finally(() => forget(path)),
    remove: (path, base) => sink.remove(path, base).finally(() => forget(path)),
    rename: (from, to) =>
      sink.rename(from, to).finally(() => {
        forget(from);
        forget(to);
      }),
    ...(sink.busy === undefined ? {} : { busy: (path: string) => sink.busy!(path) }),
    ...(sink.close === undefined ? {} : { close: () => sink.close!() }),
  };
}
