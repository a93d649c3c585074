// Mount mode's project host (contract: daemon/host.ts). The daemon loads this module with a dynamic
// import only when a project uses mount mode, so watch-only daemons never load the FUSE addon.
import type { ContentStore } from '../../engine/ports/content-store.js';
import { type AttrRows, attrRowsIn, MountAttrs } from './attrs.js';
import { linkRowsIn } from './link-groups.js';
import { sparseRowsIn } from './sparse.js';
import { MountTimes, type TimeRows, timeRowsIn } from './times.js';
import { StrataError } from '../../engine/errors.js';
import { InPlaceDir } from './in-place/in-place.js';
import type { WriteBackReport } from './in-place/write-back.js';
import { cleanStaleMount } from './stale-mount.js';
import type { HostContext, HostFactory, HostStatus, ProjectHost } from '../host.js';
import type { ExplicitDirStore } from './namespace.js';
import { MountDeleteGuard } from './delete-guard.js';
import { type CaptureThread, startCaptureThread } from './capture-thread.js';
import { MountedProject } from './mounted-project.js';
import { RECOVERED_ACTOR_SUFFIX } from './recovery.js';
import { createEngineSink } from './sink.js';

export { loadFuse } from './fuse-binding.js';
export { cleanStaleMount } from './stale-mount.js';

/**
 * A HostContext may carry the daemon's local content store (reads then use positional file reads), and
 * say that the mount goes over the project's own files (`strata mount DIR --import`: in-place/).
 */
export type MountHostContext = HostContext & { store?: ContentStore; inPlace?: boolean };

class MountHost implements ProjectHost {
  private project: MountedProject | null = null;
  private state: HostStatus['state'] = 'starting';
  private error: { code: string; message: string } | null = null;
  private guard: MountDeleteGuard | null = null;
  private inPlace: InPlaceDir | null = null;
  private readonly warnings: string[] = [];
  private lastWriteBack: WriteBackReport | null = null;
  private starting: Promise<void> | null = null;
  private stopRequested = false;

  constructor(private readonly ctx: MountHostContext) {}

  start(): Promise<void> {
    this.starting ??= this.startOnce();
    return this.starting;
  }

  private async startOnce(): Promise<void> {
    const { ctx } = this;
    const inProcess = createEngineSink(ctx.engine, ctx.projectId, ctx.actor);
    // Captures run in a thread of their own when it starts (capture-thread.ts), else here.
    const thread = await startCaptureThread({ home: ctx.home, projectId: ctx.projectId, actor: ctx.actor, inProcess, logger: ctx.logger });
    const attrRows = attrRowsIn(ctx.state.db, ctx.projectId, ctx.logger);
    const timeRows = timeRowsIn(ctx.state.db, ctx.projectId, ctx.logger);
    try {
      if (ctx.inPlace === true) {
        this.state = 'scanning';
        await this.importDirectory(attrRows, timeRows);
        // Stopped while it imported (a large tree): no mount after all.
        if (this.stopRequested) throw new StrataError('SHUTTING_DOWN', { message: `${ctx.dir} was stopped before it was mounted` });
      }
      this.project = await MountedProject.start({
        engine: ctx.engine,
        projectId: ctx.projectId,
        store: ctx.store ?? null,
        home: ctx.home,
        dir: ctx.dir,
        stagingDir: ctx.stagingDir,
        ...(ctx.formerStagingDir === undefined ? {} : { formerStagingDir: ctx.formerStagingDir }),
        dirStore: batchedDirStore(ctx),
        attrRows,
        linkRows: linkRowsIn(ctx.state.db, ctx.projectId, ctx.logger),
        timeRows,
        sparseRows: sparseRowsIn(ctx.state.db, ctx.projectId, ctx.logger),
        sink: thread === null ? inProcess : announcing(thread, ctx.versioned),
        recoverySink: inProcess,
        unclosedSink: createEngineSink(ctx.engine, ctx.projectId, { ...ctx.actor, name: `${ctx.actor.name}${RECOVERED_ACTOR_SUFFIX}` }),
        logger: ctx.logger,
        ...(ctx.workstation === undefined ? {} : { workstation: ctx.workstation }),
        ...(this.inPlace === null ? {} : { inPlace: { backingRoot: this.inPlace.backingRoot } }),
      });
      this.inPlace?.markMounted();
      // Wired as soon as the mount is up: MountedProject.start resolves in the same turn as the mount
      // completes, so no unlink reaches the mount before this (the default admits).
      const guard = new MountDeleteGuard(ctx.engine, ctx.projectId, ctx.capture);
      this.guard = guard;
      const mountState = this.project.state;
      mountState.admitDelete = (path) => guard.admit(path);
      // A write may have created a file: the guard's count is retaken before it can trip (delete-guard.ts).
      const onCaptured = mountState.onCaptured;
      mountState.onCaptured = (path) => {
        onCaptured(path);
        if (mountState.reconciler.stats.lastVersion?.kind === 'write') guard.noteWrite();
      };
      guard.prime();
      this.state = 'mounted';
    } catch (error) {
      if (this.project === null) {
        await thread?.close();
        await this.inPlace?.abandon();
        this.inPlace = null;
      }
      this.state = 'error';
      this.error = { code: (error as { code?: string }).code ?? 'INTERNAL', message: (error as Error).message };
      throw error;
    }
  }

  /**
   * In-place: a stale mount left by a killed run is cleaned first (the directory underneath must be
   * reachable), then what the directory holds is imported (only what changed since it was last in
   * sync with the project).
   */
  private async importDirectory(attrRows: AttrRows, timeRows: TimeRows): Promise<void> {
    const { ctx } = this;
    const stale = await cleanStaleMount(ctx.dir);
    if (stale.kind === 'live') {
      throw new StrataError('PROJECT_DIR_TAKEN', { message: `${ctx.dir} is already mounted (another process serves it)`, details: { dir: ctx.dir } });
    }
    if (stale.kind === 'cleaned') {
      this.warnings.push(`removed a stale mount at ${ctx.dir} left by a process that died`);
      ctx.logger.warn({ dir: ctx.dir }, 'removed a stale mount left by a crashed run');
    }
    const inPlace = await InPlaceDir.open(ctx);
    // Set before the import: a stop meanwhile aborts it (stop()), a failure moves everything back (start()).
    this.inPlace = inPlace;
    await inPlace.syncIn(new MountAttrs(attrRows, { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 }), new MountTimes(timeRows));
    timeRows.flush();
    // The attribute rows it set are written at the end of an event-loop turn (attrs.ts): the mount
    // reads them back when it starts.
    await new Promise((resolve) => setImmediate(resolve));
  }

  async stop(): Promise<void> {
    this.stopRequested = true;
    this.inPlace?.abort();
    // A start under way (an in-place import) ends first: its mount, if it got that far, is stopped below.
    await this.starting?.catch(() => undefined);
    const project = this.project;
    if (project === null) return;
    await project.stop();
    this.state = 'stopped';
    const inPlace = this.inPlace;
    if (inPlace !== null) {
      this.inPlace = null;
      try {
        // Every name of a hard link gets its file's mode and owner (kept under its first name).
        const { attrs, links } = project.state;
        this.lastWriteBack = await inPlace.writeBack({
          explicitDirs: project.state.ns.explicitDirs,
          attrs: { of: (path, kind, executable) => attrs.of(links.primaryOf(path), kind, executable) },
          times: (path) => project.state.shownTimes(path),
          setTimes: (real, atime, mtime) => project.state.backing.setTimes(real, atime, mtime),
        });
      } finally {
        this.warnings.push(...inPlace.warnings);
        await inPlace.close();
      }
    }
  }

  /** In-place: what the last write-back did (null: none, or the mount was still there). */
  writeBackReport(): WriteBackReport | null {
    return this.lastWriteBack;
  }

  status(): HostStatus {
    const mount = this.project?.status();
    const guard = this.ctx.capture.stats().massDeleteGuard;
    const warnings = [...this.warnings, ...(this.inPlace?.warnings ?? []), ...(mount?.warnings ?? [])];
    if (guard.tripped) {
      warnings.push(
        `MASS-DELETE GUARD TRIPPED since ${guard.since}: ${guard.missing} deletion(s) through the mount were refused (EPERM); every file is kept. ` +
          'If the deletions are real, run `strata guard reset` and delete again.',
      );
    }
    return {
      state: this.state === 'mounted' && guard.tripped ? 'guarded' : this.state,
      backend: 'fuse',
      scan: this.inPlace?.progress ?? null,
      warnings,
      pending: mount?.pending ?? 0,
      ...(mount === undefined
        ? {}
        : {
            capture: { captured: mount.captured, lastVersion: mount.lastVersion, errors: mount.errors, historyNotKept: mount.historyNotKept },
            mount: { openFiles: mount.openFiles, dirty: mount.dirty, pendingPaths: mount.pendingPaths, staged: mount.staged, ops: mount.ops, requests: mount.requests, notShown: mount.notShown },
          }),
      ...(this.error === null ? {} : { error: this.error }),
    };
  }

  /** The engine has changes the mount does not show yet (namespace.ts behind). */
  async diskBehind(): Promise<boolean> {
    return (await this.project?.state.ns.behind()) ?? false;
  }

  /** ProjectHost.captureNow (mounted-project.ts); nothing mounted: nothing waits. */
  async captureNow(): Promise<void> {
    await this.project?.captureNow();
  }

  /** ProjectHost.checkWritable (mounted-project.ts); nothing mounted: nothing of the mount's is in the way. */
  async checkWritable(paths: string[]): Promise<void> {
    await this.project?.checkWritable(paths);
  }

  /** ProjectHost.mayReplaceDirectory (mounted-project.ts); nothing mounted: nothing of the mount's is in the way. */
  async mayReplaceDirectory(path: string): Promise<boolean> {
    return (await this.project?.mayReplaceDirectory(path)) ?? true;
  }

  /** For the mass-delete guard: the engine's count (see delete-guard.ts). */
  trackedFiles(): number {
    // In-place, before the mount: what the directory held when it was last in sync (the import's deletions count against it).
    if (this.project === null && this.ctx.inPlace === true) return this.ctx.state.index.count(this.ctx.projectId);
    const local = this.project?.trackedFiles() ?? 0;
    return this.guard?.tracked(local) ?? local;
  }
}

/**
 * Directories the engine cannot know (no file below them) are kept in the daemon's state DB. Writes
 * made in one event-loop turn share one transaction: unpacking a tree creates a thousand directories,
 * and one autocommit each cost ~130 us of the thread that answers the kernel. A crash in between loses
 * at most that turn's empty directories (a hint-level loss: a file written below one recreates it).
 */
function batchedDirStore(ctx: HostContext): ExplicitDirStore {
  const queue: Array<{ add: boolean; path: string }> = [];
  const flush = ctx.state.db.transaction(() => {
    for (const { add, path } of queue.splice(0)) {
      if (add) ctx.state.emptyDirs.add(ctx.projectId, path);
      else ctx.state.emptyDirs.remove(ctx.projectId, path);
    }
  });
  const push = (add: boolean, path: string) => {
    if (queue.length === 0) {
      setImmediate(() => {
        try {
          flush();
        } catch (error) {
          ctx.logger.warn({ err: (error as Error).message }, 'mount: recording empty directories failed');
        }
      });
    }
    queue.push({ add, path });
  };
  return {
    list: () => ctx.state.emptyDirs.list(ctx.projectId),
    add: (path) => push(true, path),
    remove: (path) => push(false, path),
  };
}

export const createMountHost: HostFactory = (ctx) => new MountHost(ctx);

/**
 * The capture thread's versions are committed by the worker's own engine, whose listeners are not
 * this process's: sync's push loop heard of them only at its 30 s idle poll (a save in a `clone
 * --mount` directory waited 28.5–30 s to be pushed while status said idle with one queued). Each
 * capture that recorded something says so here.
 */
function announcing(sink: CaptureThread, versioned: (() => void) | undefined): CaptureThread {
  if (versioned === undefined) return sink;
  const told = async <T>(result: Promise<T>): Promise<T> => {
    const value = await result;
    versioned();
    return value;
  };
  return {
    write: (...args) => told(sink.write(...args)),
    remove: (path, base) => told(sink.remove(path, base)),
    rename: (from, to) => told(sink.rename(from, to)),
    busy: (path) => sink.busy(path),
    close: () => sink.close(),
  };
}
