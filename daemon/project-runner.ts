// One configured project inside the daemon: its capture pipeline and its host (watch or mount), and
// the status line `strata status` shows for it.

import { statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { ContentStore, Engine } from '../engine/engine-api.js';
import type { Actor } from '../engine/types.js';
import { createIgnoreRules } from './capture/ignore.js';
import { createCapturePipeline, type PipelineHandle } from './capture/pipeline.js';
import type { DaemonProjectConfig } from './config.js';
import type {
  CaptureStats,
  HostContext,
  HostFactory,
  HostStatus,
  IncomingStatus,
  MountCaptureStatus,
  ProjectHost,
  ProjectMode,
  WatchReconcileStatus,
} from './host.js';
import type { DaemonState } from './state.js';
import { liveTokenSource } from '../cli/credentials.js';
import { readServerKey } from './sync/link.js';
import { ProjectSync, type SyncHostFacts, type SyncStatus } from './sync/project-sync.js';
import { type WatchOptions, watchHostFactory } from './watch/host.js';

export interface ProjectStatus extends CaptureStats {
  projectId: string;
  name: string | null;
  dir: string;
  mode: ProjectMode;
  state: HostStatus['state'];
  backend: string | null;
  /** watch mode while polling: every how long, and why (null otherwise; absent from older daemons) */
  poll?: HostStatus['poll'];
  scan: HostStatus['scan'];
  warnings: string[];
  error?: HostStatus['error'];
  /** watch mode: the periodic reconciliation (null in mount mode, and while polling from the start) */
  reconcile: WatchReconcileStatus | null;
  /** mount mode: open files, changes not yet versioned, FUSE operation counts (null in watch mode) */
  mount: MountCaptureStatus | null;
  /** watch mode: changes made elsewhere brought to disk (null in mount mode, which shows the engine directly) */
  incoming: IncomingStatus | null;
  /** linked to a server project: replication state (null when not linked) */
  sync: SyncStatus | null;
  /** mount mode over the project's own files (`strata mount --import`): unmounting leaves them there */
  inPlace?: boolean;
  /** files here whose names cannot be recorded (not valid UTF-8): not versioned, not synced; up to 20 shown (\xHH) */
  unrepresentable: { count: number; paths: string[] };
}

const MAX_ERRORS = 20;

/** Pipeline stats plus the captures a host made on its own (mount mode); same fields for both modes. */
function mergeCapture(pipeline: CaptureStats, own: HostStatus['capture']): CaptureStats {
  if (own === undefined) return pipeline;
  const last = [pipeline.lastVersion, own.lastVersion].filter((v) => v !== null).sort((a, b) => a.timestamp.localeCompare(b.timestamp));
  const errors = [...pipeline.errors, ...own.errors].sort((a, b) => a.time.localeCompare(b.time)).slice(-MAX_ERRORS);
  const notKept = own.historyNotKept;
  const historyNotKept =
    notKept === undefined || notKept.count === 0
      ? pipeline.historyNotKept
      : { count: pipeline.historyNotKept.count + notKept.count, example: pipeline.historyNotKept.example ?? notKept.example };
  return { ...pipeline, captured: pipeline.captured + own.captured, lastVersion: last.at(-1) ?? null, errors, historyNotKept };
}

function historyWarning(notKept: CaptureStats['historyNotKept']): string[] {
  if (notKept.count === 0 || notKept.example === null) return [];
  const { path, size } = notKept.example;
  const ext = /\.[^./]+$/.exec(path)?.[0]?.toLowerCase();
  return [
    `the history of ${notKept.count} large file(s) is not kept, e.g. ${JSON.stringify(path)} (${size} bytes): files over the size threshold keep only their current content unless their extension is allowlisted${ext ? ` (strata policy allow ${ext})` : ''}`,
  ];
}

export interface RunnerDeps {
  engine: Engine;
  actor: Actor;
  state: DaemonState;
  logger: Logger;
  home: string;
  stagingDir: string;
  formerStagingDir?: string;
  store?: ContentStore;
  watch?: WatchOptions;
}

/** When dist/ was built (scripts/env.sh's stamp) if that is after this process started, else null. */
function builtAfterStart(): string | null {
  try {
    const built = statSync(fileURLToPath(new URL('../.build-stamp', import.meta.url))).mtimeMs;
    return built > performance.timeOrigin ? new Date(built).toISOString() : null;
  } catch {
    return null;
  }
}

/** The mount host lives in daemon/mount/index.ts; loaded only when a project uses mount mode. */
async function mountFactory(): Promise<HostFactory> {
  const specifier = './mount/index.js';
  let loaded: { createMountHost?: HostFactory };
  try {
    loaded = (await import(specifier)) as { createMountHost?: HostFactory };
  } catch (error) {
    const { StrataError } = await import('../engine/errors.js');
    // Strata rebuilt under this running daemon (`git pull`, then any bin/strata run rebuilds dist/):
    // the new mount code does not link against the modules this process loaded at its start. That is
    // no FUSE problem, and watch mode is not the way out: a restart is.
    const rebuiltAt = builtAfterStart();
    if (rebuiltAt !== null) {
      throw new StrataError('INTERNAL', {
        message: `Strata was rebuilt (${rebuiltAt}) after this daemon started: its mount code no longer loads into it (${(error as Error).message}); restart the daemon (\`systemctl --user restart strata-daemon\`, or stop and start \`strata daemon\`)`,
        details: { reason: 'rebuilt-since-start', rebuiltAt },
        cause: error,
      });
    }
    throw new StrataError('FUSE_UNAVAILABLE', {
      message: `Mount mode is not available (${(error as Error).message}); use \`strata watch DIR\` instead`,
      cause: error,
    });
  }
  if (typeof loaded.createMountHost !== 'function') throw new TypeError('daemon/mount/index.js does not export createMountHost');
  return loaded.createMountHost;
}

export class ProjectRunner {
  readonly config: DaemonProjectConfig;
  name: string | null = null;
  #host: ProjectHost | null = null;
  #pipeline: PipelineHandle | null = null;
  #startError: { code: string; message: string } | null = null;
  #sync: ProjectSync | null = null;
  readonly #deps: RunnerDeps;

  constructor(config: DaemonProjectConfig, deps: RunnerDeps) {
    this.config = config;
    this.#deps = deps;
  }

  get host(): ProjectHost | null {
    return this.#host;
  }

  get pipeline(): PipelineHandle | null {
    return this.#pipeline;
  }

  get sync(): ProjectSync | null {
    return this.#sync;
  }

  async start(): Promise<void> {
    const { engine, state, logger } = this.#deps;
    const { projectId, dir, mode } = this.config;
    const log = logger.child({ projectId, mode });
    try {
      this.name = (await engine.getProject(projectId)).name;
      const rules = createIgnoreRules(dir);
      let host: ProjectHost | null = null;
      const pipeline = createCapturePipeline({
        engine,
        projectId,
        actor: this.#deps.actor,
        logger: log,
        ignore: rules,
        state,
        releaseHeldOnCapture: mode === 'watch',
        ...(mode === 'watch' ? { deleteBase: (path: string) => state.index.get(projectId, path)?.versionId } : {}),
        ...(mode === 'watch' && this.config.sync !== undefined
          ? { conflictCopies: { workstation: this.config.sync.workstation, writeBase: (path: string) => state.index.get(projectId, path)?.versionId ?? null } }
          : {}),
        ...(mode === 'watch' && this.config.sync === undefined ? { restoreWins: { writeBase: (path: string) => state.index.get(projectId, path)?.versionId ?? null } } : {}),
        tracked: () => host?.trackedFiles() ?? state.index.count(projectId),
        arrivals: () => host?.arrivals?.() ?? null,
      });
      this.#pipeline = pipeline;
      // `inPlace`: read by the mount host only (daemon/mount/index.ts MountHostContext).
      const ctx: HostContext & { inPlace?: boolean } = {
        engine,
        projectId,
        dir,
        actor: this.#deps.actor,
        state,
        logger: log,
        capture: pipeline,
        home: this.#deps.home,
        stagingDir: this.#deps.stagingDir,
        versioned: () => this.#sync?.wake(),
        ...(this.config.sync === undefined ? {} : { workstation: this.config.sync.workstation }),
        ...(this.#deps.formerStagingDir === undefined ? {} : { formerStagingDir: this.#deps.formerStagingDir }),
        ...(this.#deps.store ? { store: this.#deps.store } : {}),
        ...(this.config.inPlace === true ? { inPlace: true } : {}),
      };
      // `strata watch --poll`: the project's own setting wins over the daemon's defaults.
      const polled = this.config.pollMs === undefined ? {} : { forcePolling: true, pollMs: this.config.pollMs, pollChosen: true };
      const factory = mode === 'watch' ? watchHostFactory({ ...this.#deps.watch, ...polled, reloadIgnore: () => rules.reload() }) : await mountFactory();
      host = factory(ctx);
      this.#host = host;
      this.#sync = this.#createSync(log);
      await host.start();
      log.info({ dir }, `${mode === 'watch' ? 'watching' : 'mounted'} ${dir}`);
      this.#sync?.start();
    } catch (error) {
      const code = (error as { code?: string }).code ?? 'INTERNAL';
      this.#startError = { code, message: (error as Error).message };
      log.error({ dir, code, err: (error as Error).message }, 'project could not start');
    }
  }

  /** Replication to the linked server project (issue 14); its loops start once the host shows the files. */
  #createSync(log: Logger): ProjectSync | null {
    const link = this.config.sync;
    const store = this.#deps.store;
    if (link === undefined || store === undefined) return null;
    const { projectId } = this.config;
    const apiKey = readServerKey(this.#deps.home, link.server);
    return new ProjectSync({
      engine: this.#deps.engine,
      store,
      state: this.#deps.state,
      logger: log,
      projectId,
      actor: this.#deps.actor,
      link,
      apiKey,
      // No key kept for the server: the person signed in to it (`strata login`), checked at each request.
      ...(apiKey === null ? { signIn: liveTokenSource(link.server) } : {}),
      trackedFiles: () => this.#host?.trackedFiles() ?? this.#deps.state.index.count(projectId),
      ready: () => {
        const scan = this.#host?.status().scan;
        return scan === null || scan === undefined || scan.finished;
      },
      hostFacts: () => this.#syncHostFacts(),
      diskBehind: async () => (await this.#host?.diskBehind?.()) ?? false,
      // A pulled dataset's copy becomes the file by a link: only worth making on the home's filesystem.
      writesFiles: this.config.mode === 'watch' && sameFilesystem(this.config.dir, this.#deps.home),
      // The host decides (ProjectHost.mayReplaceDirectory); a refusal skips the version (needs the user).
      mayReplaceDirectory: async (path) => (await this.#host?.mayReplaceDirectory?.(path)) ?? true,
    });
  }

  /** What this directory adds to sync's verdict (sync-verdict.ts): edits not versioned yet, paths not written, the local guard. */
  #syncHostFacts(): SyncHostFacts {
    const host = this.#host?.status();
    const pipeline = this.#pipeline?.stats();
    const guard = pipeline?.massDeleteGuard;
    return {
      capturing: (pipeline?.pending ?? 0) + (host?.pending ?? 0) + (host?.mount?.dirty ?? 0),
      notOnDisk: host?.incoming?.notOnDisk ?? host?.mount?.notShown ?? { count: 0, example: null },
      localGuard: guard?.tripped === true ? { missing: guard.missing, since: guard.since } : null,
      unrepresentable: { count: host?.unrepresentable?.count ?? 0, example: host?.unrepresentable?.paths[0] ?? null },
    };
  }

  async stop(): Promise<void> {
    const log = this.#deps.logger.child({ projectId: this.config.projectId });
    try {
      await this.#sync?.stop();
    } catch (error) {
      log.error({ err: (error as Error).message }, 'sync did not stop cleanly');
    }
    try {
      await this.#host?.stop();
    } catch (error) {
      log.error({ err: (error as Error).message }, 'project host did not stop cleanly');
    }
    try {
      await this.#pipeline?.close();
    } catch (error) {
      log.error({ err: (error as Error).message }, 'capture pipeline did not close cleanly');
    }
  }

  /** Sync again with the credential kept now (after `strata init --server` gave a new key). */
  async restartSync(): Promise<void> {
    if (this.#sync === null) return;
    await this.#sync.stop();
    this.#sync = this.#createSync(this.#deps.logger.child({ projectId: this.config.projectId, mode: this.config.mode }));
    this.#sync?.start();
  }

  async resetGuard(): Promise<void> {
    this.#pipeline?.resetGuard();
    await this.#host?.rescan?.();
  }

  status(): ProjectStatus {
    const host = this.#host?.status();
    const pipeline: CaptureStats = this.#pipeline?.stats() ?? {
      pending: 0,
      captured: 0,
      lastVersion: null,
      errors: [],
      massDeleteGuard: { tripped: false, since: null, missing: 0 },
      historyNotKept: { count: 0, example: null },
    };
    const capture = mergeCapture(pipeline, host?.capture);
    const status: ProjectStatus = {
      projectId: this.config.projectId,
      name: this.name,
      dir: this.config.dir,
      mode: this.config.mode,
      state: this.#startError ? 'error' : (host?.state ?? 'starting'),
      backend: host?.backend ?? null,
      poll: host?.poll ?? null,
      scan: host?.scan ?? null,
      warnings: [...(host?.warnings ?? []), ...historyWarning(capture.historyNotKept)],
      ...capture,
      pending: capture.pending + (host?.pending ?? 0),
      reconcile: host?.reconcile ?? null,
      mount: host?.mount ?? null,
      incoming: host?.incoming ?? null,
      sync: this.#sync?.status() ?? null,
      unrepresentable: host?.unrepresentable ?? { count: 0, paths: [] },
      ...(this.config.inPlace === true ? { inPlace: true } : {}),
    };
    const error = this.#startError ?? host?.error;
    if (error) status.error = error;
    return status;
  }
}

/** Whether two existing paths are on one filesystem (false when either cannot be looked at). */
function sameFilesystem(a: string, b: string): boolean {
  try {
    return statSync(a).dev === statSync(b).dev;
  } catch {
    return false;
  }
}
