// One project mounted at a directory: checks, stale-mount cleanup, the state, the FUSE session, and an
// orderly stop (detach the mount, capture everything pending, close the workers).
import { type AttrRows, MountAttrs } from './attrs.js';
import { LinkGroups, type LinkRows } from './link-groups.js';
import { splitDiverged } from './ops-links.js';
import { mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Engine } from '../../engine/engine-api.js';
import { StrataError } from '../../engine/errors.js';
import type { ContentStore } from '../../engine/ports/content-store.js';
import type { MountCaptureStatus } from '../host.js';
import { directoryInTheWay } from '../beneath.js';
import { Backing, isMissing } from './backing.js';
import { type FuseMount, loadFuse, mountFuse } from './fuse-binding.js';
import { buildFuseOps, type OpStats } from './fuse-ops.js';
import { MountIgnore, STRATAIGNORE } from './ignore.js';
import { MountJournal } from './journal.js';
import { MountState } from './mount-state.js';
import { assertEmptyDir } from '../projects.js';
import { type ExplicitDirStore, Namespace } from './namespace.js';
import { type ReconcileStats, Reconciler } from './reconciler.js';
import { RECOVERED_ACTOR_SUFFIX, recoverStaging } from './recovery.js';
import type { MountSink } from './sink.js';
import { cleanStaleMount, detachMount } from './stale-mount.js';
import { mountSharing } from './sharing.js';
import { raiseReadahead } from './readahead.js';
import { StagingPool } from './staging-pool.js';
import { SparseBlocks, type SparseRows } from './sparse.js';
import { MountTimes, type TimeRows } from './times.js';

export interface MountProjectOptions {
  engine: Engine;
  projectId: string;
  /** the local content store (positional reads of objects); null = read through the engine */
  store: ContentStore | null;
  home: string;
  /** absolute mount point */
  dir: string;
  stagingDir: string;
  /** where an earlier run may have staged (the home, before staging moved to local disk, or back): its leftovers are recovered too */
  formerStagingDir?: string;
  dirStore: ExplicitDirStore;
  /** where modes and owners are kept (attrs.ts; default: in memory only) */
  attrRows?: AttrRows;
  /** hard-link groups (link-groups.ts); memory only when absent */
  linkRows?: LinkRows;
  /** file times (times.ts); memory only when absent */
  timeRows?: TimeRows;
  /** blocks of sparse contents (sparse.ts); memory only when absent */
  sparseRows?: SparseRows;
  sink: MountSink;
  /**
   * Replays what a crashed run left (recovery.ts) before the mount serves anything: record by record,
   * so the in-process sink, without a thread hop per record (default: `sink`).
   */
  recoverySink?: MountSink;
  /** the sink for bytes of files still open at a crash: its actor marks their versions as recovered */
  unclosedSink?: MountSink;
  logger: Logger;
  /** names conflict copies of files the project's tree refuses (HostContext.workstation; default: the host name) */
  workstation?: string;
  /** quiet time after a close before its capture (default 100 ms, like watch mode) */
  settleMs?: number;
  /**
   * Kernel attribute cache for files (seconds; default 10). A change the engine makes behind the mount
   * (a restore through the API, a sync pull) reaches the mount through the engine's change listener,
   * and one by another process on the same home through the namespace's look every second
   * (Namespace.start): either tells the kernel to forget that path (MountState.forgetInKernel). So the
   * lifetime only bounds what a missed change could cost. At 0 every lstat was a request: `git
   * status` over 50,000 files asked 50,000 times; at 1 s (bindfs's) each `git status` more than a
   * second after the last asked again (answered in C, 1.1 s for 50,000 files, bindfs 0.9-1.1 s).
   */
  attrTimeoutS?: number;
  /**
   * Kernel name cache (seconds; default 60). Names change through the mount's own requests (the kernel
   * knows) or behind it, which drops the name as above. At 1 s a `git status` a second after the last
   * one looked up every file again (a LOOKUP each, always answered in JS); at 10 s, one 10 s later.
   */
  entryTimeoutS?: number;
  now?: () => number;
  /**
   * An in-place mount (in-place/in-place.ts): the directory holds files (imported already) and the
   * mount goes over them; its backing directory is this path (inside the directory, reached through a
   * descriptor) instead of one under the home.
   */
  inPlace?: { backingRoot: string };
}

export interface MountStatus extends MountCaptureStatus {
  pending: number;
  captured: number;
  historyNotKept: ReconcileStats['historyNotKept'];
  lastVersion: ReconcileStats['lastVersion'];
  errors: ReconcileStats['errors'];
  warnings: string[];
}

/** libfuse mount options; the rest (timeouts, max_write, atomic O_TRUNC) is set per request or at INIT. */
export const FUSE_MOUNT_OPTIONS = ['fsname=strata', 'subtype=strata'];

// 1 MiB requests, the kernel's largest (max_pages 256): each write request is a trip through the event
// loop (measured with fuse-native: 29 MB/s with 4 KiB requests, 530 MB/s with 128 KiB for a trivial
// passthrough), and reads of stored content come in pieces this large too (readahead.ts). Measured, 2 GiB
// `dd` through the mount: 16,384 write requests become 2,048.
const MAX_WRITE = 1024 * 1024;
/** What fuse-native's per-operation timeout was: long enough for a capture of a large file under load. */
const OP_TIMEOUT_MS = 120_000;

export class MountedProject {
  readonly warnings: string[] = [];
  readonly opStats: OpStats = new Map();
  private fuse: FuseMount | null = null;
  private stopping: Promise<void> | null = null;

  private constructor(
    readonly state: MountState,
    private readonly ignore: MountIgnore,
    private readonly options: MountProjectOptions,
  ) {}

  static async start(options: MountProjectOptions): Promise<MountedProject> {
    const Fuse = await loadFuse();
    const { dir, logger } = options;
    const warnings: string[] = [];
    const stale = await cleanStaleMount(dir);
    if (stale.kind === 'live') {
      throw new StrataError('PROJECT_DIR_TAKEN', { message: `${dir} is already mounted (another process serves it)`, details: { dir } });
    }
    if (stale.kind === 'cleaned') {
      warnings.push(`removed a stale mount at ${dir} left by a process that died`);
      logger.warn({ dir }, 'removed a stale mount left by a crashed run');
    }
    if (options.inPlace === undefined) await assertEmptyDir(dir);
    await mkdir(options.stagingDir, { recursive: true, mode: 0o700 });
    const backingRoot = options.inPlace?.backingRoot ?? join(options.home, 'daemon', 'mounts', options.projectId, 'unversioned');
    await mkdir(backingRoot, { recursive: true, mode: 0o700 });
    const now = options.now ?? Date.now;

    const recovered = await recoverStaging({ ...options, sink: options.recoverySink ?? options.sink }, logger);
    if (options.formerStagingDir !== undefined && options.formerStagingDir !== options.stagingDir) {
      // Staging moved (the home went onto a network filesystem, or STRATA_MOUNT_STAGING changed): what
      // a crash left at the old place is this project's all the same.
      const former = await recoverStaging({ ...options, stagingDir: options.formerStagingDir, sink: options.recoverySink ?? options.sink }, logger);
      recovered.versioned += former.versioned;
      recovered.unclosed.push(...former.unclosed);
    }
    if (recovered.versioned > 0) warnings.push(`versioned ${recovered.versioned} file(s) a previous run had written but not yet captured`);
    if (recovered.unclosed.length > 0) {
      warnings.push(
        `kept ${recovered.unclosed.length} file(s) a previous run was still writing when it died, as versions marked "${RECOVERED_ACTOR_SUFFIX.trim()}" (e.g. ${JSON.stringify(recovered.unclosed[0])}): check them, they may be incomplete`,
      );
    }

    let state!: MountState;
    const ignore = new MountIgnore(options.engine, options.projectId);
    await ignore.reload();
    const links = new LinkGroups(options.linkRows ?? null);
    const onExternalChange = (path: string) => {
      state.splitOff(path);
      state.onExternalChange(path);
    };
    const times = new MountTimes(options.timeRows ?? null);
    const ns = new Namespace(options.engine, options.projectId, options.dirStore, onExternalChange, now, times);
    ns.forgetNode = (path) => state.onExternalChange(path);
    ns.linkedNames = () => links.paths();
    await ns.start();
    const sink = options.sink;
    if (sink.busy !== undefined) ns.ownInFlight = (path) => sink.busy!(path);
    const pool = new StagingPool(options.stagingDir);
    pool.warm();
    state = new MountState({
      engine: options.engine,
      projectId: options.projectId,
      store: options.store,
      ns,
      backing: new Backing(backingRoot, (real, mode, dev) => Fuse.mknod(real, mode, dev), {
        get: (real, name, into) => Fuse.backingGetxattr(real, name, into),
        list: (real, into) => Fuse.backingListxattr(real, into),
        set: (real, name, value, flags) => Fuse.backingSetxattr(real, name, value, flags),
        remove: (real, name) => Fuse.backingRemovexattr(real, name),
      }, (real, atime, mtime) => Fuse.lutimens(real, atime?.ms ?? Number.NaN, atime?.ns ?? 0, mtime?.ms ?? Number.NaN, mtime?.ns ?? 0)),
      pool,
      sink: options.sink,
      journal: MountJournal.forProject(options.stagingDir, options.projectId),
      attrs: new MountAttrs(options.attrRows ?? null, { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 }),
      links,
      times,
      sparse: new SparseBlocks(options.sparseRows ?? null),
      logger,
      workstation: options.workstation ?? hostname().split('.')[0],
      isIgnored: (path, isDir) => ignore.ignores(path, isDir),
      projectJson: Buffer.from(`${JSON.stringify({ projectId: options.projectId, home: options.home }, null, 2)}\n`),
      uid: process.getuid?.() ?? 0,
      gid: process.getgid?.() ?? 0,
      now,
    });
    ns.isBusy = () => state.isBusy(now());
    ns.onlyDirsUnversioned = (path) => state.backing.onlyDirsBelow(path);
    ns.removeEmptyUnversioned = async (path) => {
      if ((await state.backing.readdir(path)).length > 0) return false;
      try {
        await state.backing.rmdir(path);
      } catch (error) {
        // Not there (as for most directories made here), or filled meanwhile.
        if (!isMissing(error)) return false;
      }
      state.backingDirs.delete(path);
      return true;
    };
    ns.onDirDropped = (path) => state.attrs.remove(path, true);
    // STRATA_MOUNT_SETTLE_MS: a tuning knob (and how the benchmarks measure the mount without captures).
    state.reconciler = new Reconciler(state, options.settleMs ?? Number(process.env['STRATA_MOUNT_SETTLE_MS'] ?? 100));
    // A name linked just before a crash may not have its first version yet: it is checked (and made) now.
    for (const name of links.secondaries()) state.reconciler.schedule(name);
    state.onCaptured = (path) => {
      if (path === STRATAIGNORE) void ignore.reload();
    };
    const project = new MountedProject(state, ignore, options);
    const sharing = await mountSharing();
    if (sharing.limitation !== null) {
      warnings.push(sharing.limitation);
      logger.info({ dir }, sharing.limitation);
    }
    project.warnings.push(...warnings);
    try {
      project.fuse = await mountFuse(Fuse, dir, buildFuseOps(state, project.opStats), {
        options: [...FUSE_MOUNT_OPTIONS, ...sharing.options],
        attrTimeoutS: options.attrTimeoutS ?? 10,
        entryTimeoutS: options.entryTimeoutS ?? 60,
        dirAttrTimeoutS: 1,
        maxWrite: MAX_WRITE,
        opTimeoutMs: OP_TIMEOUT_MS,
        unmount: detachMount,
      });
      const fuse = project.fuse;
      state.forgetInKernel = (path, renumber) => void fuse.invalidate(path, renumber).catch(() => undefined);
      state.contentMaps = fuse.contentMaps;
      await raiseReadahead(dir, logger);
      ns.onResync = () => {
        void fuse.invalidateAll().catch(() => undefined);
        void splitDiverged(state).catch((error: unknown) => logger.warn({ err: (error as Error).message }, 'mount: checking hard links after a resync failed'));
      };
    } catch (error) {
      // A mount that half-happened (mounted, then libfuse refused an option) must not stay behind.
      await cleanStaleMount(dir).catch(() => {});
      await pool.close();
      throw error;
    }
    return project;
  }

  /** Detaches the mount, then versions everything pending. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const fuse = this.fuse;
      this.fuse = null;
      this.state.ns.stop();
      const requests = fuse?.requestCounts() ?? {};
      if (fuse !== null) {
        try {
          await fuse.unmount();
        } catch (error) {
          this.options.logger.error({ err: (error as Error).message }, 'unmount failed');
        }
      }
      await this.state.reconciler.flushAll();
      this.state.times.flush();
      await this.options.sink.close?.();
      await this.state.pool.close();
      // Everything was captured (or failed and was logged): a log left now would replay stale history.
      await this.state.journal.close(this.state.reconciler.pendingCount() === 0);
      if (process.env['STRATA_MOUNT_OPSTATS'] === '1') {
        const rows = [...this.opStats].sort((a, b) => b[1].ms - a[1].ms);
        this.options.logger.info({ ops: Object.fromEntries(rows.map(([op, s]) => [op, { n: s.count, ms: Math.round(s.ms), avgUs: Math.round((s.ms * 1000) / s.count) }])), requests }, 'mount: operation stats');
      }
    })();
    return this.stopping;
  }

  status(): MountStatus {
    const { stats } = this.state.reconciler;
    const warnings = [...this.warnings];
    if (this.ignore.problem !== null) warnings.push(this.ignore.problem);
    if (this.state.journal.problem !== null) warnings.push(this.state.journal.problem);
    const { count, example } = this.state.unversionable;
    if (count > 0) {
      warnings.push(
        `${count} name(s) Strata cannot version (a backslash or control character, over 255 bytes, or Unicode not in NFC) are kept as plain files without history, e.g. ${JSON.stringify(example)}`,
      );
    }
    // One pass over the nodes with local state (open, changed or settling files; not the whole tree).
    let dirty = 0;
    let staged = 0;
    for (const node of this.state.ns.nodes.values()) {
      if (!node.dirty || node.detached) continue;
      dirty += 1;
      if (node.content.kind === 'staged') staged += 1;
    }
    const ops: MountCaptureStatus['ops'] = {};
    for (const [op, { count, ms }] of [...this.opStats].sort((a, b) => a[0].localeCompare(b[0]))) {
      ops[op] = { count, totalMs: Math.round(ms), avgUs: count === 0 ? 0 : Math.round((ms * 1000) / count) };
    }
    return {
      pending: this.state.reconciler.pendingCount(),
      pendingPaths: this.state.reconciler.pendingPaths(10),
      openFiles: this.state.handles.size,
      dirty,
      staged,
      ops,
      requests: this.fuse?.requestCounts() ?? {},
      notShown: { count: this.state.ns.hiddenFiles.size, example: this.state.ns.hiddenFiles.values().next().value ?? null },
      captured: stats.captured,
      historyNotKept: { ...stats.historyNotKept },
      lastVersion: stats.lastVersion && { ...stats.lastVersion },
      errors: [...stats.errors],
      warnings,
    };
  }

  /**
   * ProjectHost.mayReplaceDirectory. The engine's files below `path` are accounted for (sync checked
   * that the server kept each as a conflict copy); what only this mount holds below it is not: a
   * file the project does not version (an editor's swap file, `.git/`: the backing directory) or
   * local state not recorded yet (Namespace.unrecordedBelow). Given way, the file at `path` would
   * put those out of reach, and sync would say in sync. Watch mode refuses the same on disk.
   */
  async mayReplaceDirectory(path: string): Promise<boolean> {
    return (await this.heldBelow(path)) === null;
  }

  /** What below the directory at `path` only this mount holds (mayReplaceDirectory), or null. */
  private async heldBelow(path: string): Promise<string | null> {
    return this.state.ns.unrecordedBelow(path) ?? (await this.state.backing.fileBelow(path));
  }

  /** ProjectHost.captureNow: what waits for its settle delay is versioned now (Reconciler.settleNow). */
  captureNow(): Promise<void> {
    return this.state.reconciler.settleNow();
  }

  /**
   * ProjectHost.checkWritable: a file restored or written through the API where the mount shows a
   * directory takes its place only when the directory holds nothing but directories and the
   * engine's own files (the restore removes those itself, or the engine refuses). A file the project
   * does not version below it (`F/x.pyc`), or one not recorded yet, would be hidden by the file —
   * the restore answered "restored F" and the mount went on showing the directory (issue 39 item
   * 10) — so the restore is refused before it records anything, as watch mode refuses on disk.
   */
  async checkWritable(paths: string[]): Promise<void> {
    for (const path of paths) {
      if (this.ignore.ignores(path, false) || (await this.state.ns.kindOf(path)) !== 'dir') continue;
      const blocking = await this.heldBelow(path);
      if (blocking !== null) throw directoryInTheWay(path, blocking);
    }
  }

  /** Files the mount shows from the engine plus new ones not yet captured (for the mass-delete guard). */
  trackedFiles(): number {
    return this.state.ns.nodes.size;
  }
}
