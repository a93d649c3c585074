// `strata daemon`: ONE process, ONE engine. It opens the local engine of a home, serves the control
// API on loopback with the local owner key, and runs a project host for every project in daemon.json
// (daemon/host.ts). Hosts feed the engine in-process; the API is for the CLI and other local clients.

import { mkdir, stat } from 'node:fs/promises';
import { isIP } from 'node:net';
import pino, { type Logger } from 'pino';
import { buildApp } from '../control-api/app.js';
import { captureFirst } from './capture-first.js';
import { closeDraining } from '../control-api/close-draining.js';
import type { AccessDeps } from '../engine/access/deps.js';
import { StrataError } from '../engine/errors.js';
import { createIdGenerator } from '../engine/ids.js';
import { type LocalEngine, openLocalEngine } from '../engine/local.js';
import { isLoopbackAddress, parseListen } from '../server/serve.js';
import { claimHome, type HomeClaim, type HomeClaimStatus } from '../server/home-claim.js';
import { loadPepper, resolveEnvironment } from '../server/secrets.js';
import { type DaemonConfig, type DaemonProjectConfig, daemonLayout, readDaemonConfig, withPolling, writeDaemonConfig } from './config.js';
import type { WriteBackReport } from './mount/in-place/write-back.js';
import { chooseStagingDir, type StagingChoice } from './mount/staging-dir.js';
import { acquireDaemonLock, type DaemonLock } from './lock.js';
import { ensureLocalOwner, type LocalOwner } from './owner.js';
import { ProjectRunner, type ProjectStatus } from './project-runner.js';
import { type RegisterInput, type RegisteredProject, registerProject } from './projects.js';
import { registerDaemonRoutes } from './routes.js';
import { openDaemonState, type DaemonState } from './state.js';
import type { WatchOptions } from './watch/host.js';

export interface DaemonOptions {
  home: string;
  /** HOST:PORT on loopback; default daemon.json's `listen` (127.0.0.1:7421); port 0 picks one */
  listen?: string;
  logger?: Logger;
  environment?: string;
  watch?: WatchOptions;
  /**
   * Another host took the home while this daemon used it (home-claim.ts): default, log it and exit the
   * process at once (status 75), writing nothing more to the home's databases.
   */
  onHomeLost?: (error: StrataError) => void;
}

export interface DaemonStatus {
  daemon: {
    pid: number;
    startedAt: string;
    uptimeSeconds: number;
    listen: string;
    url: string;
    home: string;
    homeClaim?: HomeClaimStatus;
    /** where mounts stage their writes (mount/staging-dir.ts) */
    staging?: Pick<StagingChoice, 'dir' | 'where' | 'warning'>;
  };
  projects: ProjectStatus[];
}

export interface RunningDaemon {
  url: string;
  home: string;
  owner: LocalOwner;
  status(): DaemonStatus;
  addProject(input: RegisterInput): Promise<{ project: RegisteredProject; status: ProjectStatus }>;
  /** `strata unmount`: stops serving a mount project (an in-place one writes its tree back) until it is mounted again. */
  unmountProject(projectId: string): Promise<UnmountResult>;
  /** `strata watch --poll [INTERVAL]` / `--no-poll`: kept in daemon.json; the project restarts that way. */
  setPolling(projectId: string, pollMs: number | null): Promise<ProjectStatus>;
  project(projectId: string): ProjectRunner | undefined;
  stop(): Promise<void>;
}

export interface UnmountResult {
  projectId: string;
  dir: string;
  inPlace: boolean;
  /** whether this call stopped a mount (false: it was not being served) */
  wasMounted: boolean;
  /** in-place: what was written back into the directory */
  writeBack: WriteBackReport | null;
}

/** Only the fields daemon.json keeps (a RegisteredProject carries its name and `created` too). */
function configOf(project: DaemonProjectConfig): DaemonProjectConfig {
  const { projectId, dir, mode, sync, inPlace, unmounted, pollMs } = project;
  return {
    projectId,
    dir,
    mode,
    ...(sync === undefined ? {} : { sync }),
    ...(inPlace === true ? { inPlace } : {}),
    ...(unmounted === true ? { unmounted } : {}),
    ...(pollMs === undefined ? {} : { pollMs }),
  };
}

/**
 * A daemon runs as the user whose home it is. Root in a colleague's project directory (`sudo strata
 * watch .`, the project's .strata/project.json naming her home) ran a daemon on her home: root-owned
 * objects, lock and state in it and root-owned files in her project, versions by "root" in her history.
 */
async function assertOwnHome(home: string): Promise<void> {
  const uid = process.geteuid?.();
  if (uid === undefined) return;
  const owner = await stat(home).then(
    (info) => info.uid,
    () => uid, // not there yet: this daemon makes it, as its own
  );
  if (owner === uid) return;
  throw new StrataError('FORBIDDEN', {
    message: `the Strata home ${home} belongs to another user (uid ${owner}): a daemon run as uid ${uid} would leave files there, and in that user's projects, that they cannot change; run it as that user (e.g. sudo -u '#${owner}' strata daemon)`,
    details: { home, owner, uid },
  });
}

/** How long a stop lets requests in flight finish before it closes their connections. */
const DRAIN_MS = 5_000;

export async function startDaemon(options: DaemonOptions): Promise<RunningDaemon> {
  const { home } = options;
  const layout = daemonLayout(home);
  // Logs go to stderr (stdout is the CLI's); STRATA_LOG_LEVEL=debug adds a line per captured version.
  const logger = options.logger ?? pino({ level: process.env['STRATA_LOG_LEVEL'] ?? 'info' }, pino.destination(2));
  await assertOwnHome(home);
  // The home for this host first (a daemon of another node is refused, naming it), then one daemon
  // on this host (daemon.lock).
  const claim: HomeClaim = await claimHome(home, {
    holder: 'strata daemon',
    onWait: (message) => logger.warn(message),
    onLost:
      options.onHomeLost ??
      ((error) => {
        logger.fatal({ code: error.code, details: error.details }, error.message);
        process.exit(75);
      }),
  });
  let lock: DaemonLock;
  try {
    lock = await acquireDaemonLock(layout.dir);
  } catch (error) {
    await claim.release();
    throw error;
  }
  const cleanups: Array<() => Promise<void> | void> = [() => claim.release(), () => lock.release()];
  const homeClaim = claim.status();
  if (homeClaim.network !== null) {
    logger.warn(
      { home, filesystem: homeClaim.network, locks: homeClaim.locks },
      `the home is on a network filesystem (${homeClaim.network}): this host holds it (lease renewed every ${Math.round(homeClaim.renewMs / 1000)} s${homeClaim.locks === 'shared' ? ', and file locks the server enforces' : ''}); another host's Strata is refused until this daemon stops`,
    );
  }
  const cleanup = async () => {
    for (const step of cleanups.reverse()) await step();
  };
  try {
    let config: DaemonConfig = readDaemonConfig(home);
    const listen = options.listen ?? config.listen;
    const { host, port } = parseListen(listen);
    if (!isLoopbackAddress(host)) {
      throw new StrataError('INVALID_ARGUMENT', {
        message: `the daemon serves its owner key's API on loopback only; ${listen} is not a loopback address (use \`strata serve\` for a network server)`,
        details: { field: 'listen' },
      });
    }
    const environment = resolveEnvironment(options.environment);
    const pepper = await loadPepper(home, { create: true });
    const local: LocalEngine = await openLocalEngine({ home });
    cleanups.push(() => local.close());
    const access: AccessDeps = { repository: local.repository, clock: local.clock, ids: createIdGenerator(local.clock), pepper, environment };
    const owner = await ensureLocalOwner(home, access);
    const state: DaemonState = openDaemonState(layout.state);
    cleanups.push(() => state.close());
    // A mount stages on local disk when the home is on a network filesystem (mount/staging-dir.ts).
    const staging = await chooseStagingDir(home, layout.staging);
    await mkdir(staging.dir, { recursive: true, mode: 0o700 });
    if (staging.warning !== null) logger.warn(staging.warning);
    else if (staging.where === 'local') logger.info({ staging: staging.dir }, `mounts stage their writes in ${staging.dir} (this machine's disk), not in the home on ${staging.homeNetwork ?? 'another filesystem'}`);

    const runners = new Map<string, ProjectRunner>();
    const runnerDeps = {
      engine: local.engine,
      actor: owner.actor,
      state,
      logger,
      home,
      stagingDir: staging.dir,
      ...(staging.dir === layout.staging ? {} : { formerStagingDir: layout.staging }),
      store: local.store,
      ...(options.watch ? { watch: options.watch } : {}),
    };
    const startedAt = new Date();
    let url = '';
    let stopping: Promise<void> | null = null;

    const daemon: RunningDaemon = {
      get url() {
        return url;
      },
      home,
      owner,
      status: () => ({
        daemon: {
          pid: process.pid,
          startedAt: startedAt.toISOString(),
          uptimeSeconds: Math.round((Date.now() - startedAt.getTime()) / 1000),
          listen,
          url,
          home,
          homeClaim: claim.status(),
          staging: { dir: staging.dir, where: staging.where, warning: staging.warning },
        },
        projects: [...runners.values()].map((runner) => runner.status()),
      }),
      async addProject(input) {
        const project = await registerProject(
          {
            home,
            engine: local.engine,
            orgId: owner.orgId,
            config: () => config,
            saveConfig: async (next) => {
              await writeDaemonConfig(home, next);
              config = next;
            },
          },
          input,
        );
        let runner = runners.get(project.projectId);
        const changed = runner !== undefined && (runner.config.mode !== project.mode || (runner.config.inPlace === true) !== (project.inPlace === true));
        if (runner && (changed || JSON.stringify(runner.config.sync) !== JSON.stringify(project.sync))) {
          // Linked to a server now, or switched to an in-place mount: the project restarts that way.
          await runner.stop();
          runners.delete(project.projectId);
          runner = undefined;
        } else if (runner && project.sync !== undefined) {
          // Linked again (perhaps with a new key: a 401 pauses sync until then).
          await runner.restartSync();
        }
        if (!runner) {
          runner = new ProjectRunner(configOf(project), runnerDeps);
          runners.set(project.projectId, runner);
          await runner.start();
        }
        return { project, status: runner.status() };
      },
      async unmountProject(projectId) {
        const entry = config.projects.find((p) => p.projectId === projectId);
        if (entry === undefined) throw new StrataError('PROJECT_NOT_FOUND', { message: 'This daemon has no such project', details: { projectId } });
        if (entry.mode !== 'mount') {
          throw new StrataError('INVALID_ARGUMENT', {
            message: `${entry.dir} is watched, not mounted: there is nothing to unmount (its files are in the directory)`,
            details: { field: 'dir', dir: entry.dir, mode: entry.mode },
          });
        }
        const runner = runners.get(projectId);
        const state = runner?.status().state;
        const wasMounted = state === 'mounted' || state === 'guarded';
        let writeBack: WriteBackReport | null = null;
        if (runner !== undefined) {
          await runner.stop();
          runners.delete(projectId);
          writeBack = (runner.host as { writeBackReport?(): WriteBackReport | null } | null)?.writeBackReport?.() ?? null;
        }
        const inPlace = entry.inPlace === true;
        if (inPlace && wasMounted && (writeBack === null || writeBack.failed > 0)) {
          // The files are all in the project, not all in the directory: serve them again rather than
          // leave an incomplete directory looking like the project.
          const again = new ProjectRunner(entry, runnerDeps);
          runners.set(projectId, again);
          await again.start();
          throw new StrataError('STORAGE_ERROR', {
            message:
              writeBack === null
                ? `${entry.dir} could not be unmounted cleanly, so its files were not written back; they are all in the project (see the daemon log)`
                : `${writeBack.failed} file(s) could not be written back into ${entry.dir} (see \`strata status\` and the daemon log); they are all in the project, which is mounted again: fix the cause and unmount again`,
            details: { dir: entry.dir, ...(writeBack === null ? {} : { writeBack }) },
          });
        }
        if (entry.unmounted !== true) {
          const next: DaemonConfig = { ...config, projects: config.projects.map((p) => (p === entry ? { ...entry, unmounted: true } : p)) };
          await writeDaemonConfig(home, next);
          config = next;
        }
        return { projectId, dir: entry.dir, inPlace, wasMounted, writeBack };
      },
      async setPolling(projectId, pollMs) {
        const entry = config.projects.find((p) => p.projectId === projectId);
        if (entry === undefined) throw new StrataError('PROJECT_NOT_FOUND', { message: 'This daemon has no such project', details: { projectId } });
        const next = withPolling(entry, pollMs);
        if (next.pollMs !== entry.pollMs) {
          const saved: DaemonConfig = { ...config, projects: config.projects.map((p) => (p === entry ? next : p)) };
          await writeDaemonConfig(home, saved);
          config = saved;
          const runner = runners.get(projectId);
          if (runner !== undefined) {
            // Watched differently from now on: the host restarts (its catch-up scan finds what changed meanwhile).
            await runner.stop();
            runners.delete(projectId);
          }
          const again = new ProjectRunner(configOf(next), runnerDeps);
          runners.set(projectId, again);
          await again.start();
        }
        return runners.get(projectId)?.status() ?? Promise.reject(new StrataError('PROJECT_NOT_FOUND', { details: { projectId } }));
      },
      project: (projectId) => runners.get(projectId),
      stop() {
        stopping ??= (async () => {
          logger.info('stopping: flushing captures and releasing project directories');
          await Promise.all([...runners.values()].map((runner) => runner.stop()));
          await cleanup();
          logger.info('stopped');
        })();
        return stopping;
      },
    };

    const app = await buildApp({
      // Restores and snapshots through the API see the directory's latest state (capture-first.ts).
      engine: captureFirst(local.engine, (projectId) => runners.get(projectId)?.host),
      repository: local.repository,
      pepper,
      environment,
      clock: local.clock,
      logger: false,
      loopbackOnly: true,
      extraRoutes: (instance, deps) => registerDaemonRoutes(instance, deps, daemon),
    });
    // Requests in flight get 5 s; the stop's own deadline (the CLI's) is 30 s.
    cleanups.push(() => closeDraining(app, DRAIN_MS));
    try {
      await app.listen({ host, port });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
      // Taken, most often by the daemon of another home (another user of a shared workstation; every
      // home starts with the same default). An address the user asked for on the command line is
      // theirs to fix; one from daemon.json is only where the CLI finds us, so take a free port and
      // record it there.
      if (options.listen !== undefined) {
        throw new StrataError('DAEMON_RUNNING', {
          message: `${listen} is in use (another daemon for another home?); pass another --listen, or none to let the daemon pick a free port`,
          details: { listen },
          cause: error,
        });
      }
      logger.warn({ listen }, `${listen} is in use (another home's daemon?): listening on a free port instead, recorded in ${layout.config}`);
      await app.listen({ host, port: 0 });
    }
    const address = app.server.address();
    const boundPort = typeof address === 'object' && address !== null ? address.port : port;
    const hostPart = isIP(host) === 6 ? `[${host}]` : host;
    url = `http://${hostPart}:${boundPort}`;
    // The CLI finds the daemon through daemon.json: record the address bound when it is not the one
    // there (port 0 in tests, a taken address, --listen).
    const bound = `${hostPart}:${boundPort}`;
    if (bound !== config.listen) {
      config = { ...readDaemonConfig(home), listen: bound };
      await writeDaemonConfig(home, config);
    }
    logger.info({ url, home }, `strata daemon listening on ${url}`);

    // `strata unmount` stopped these: they wait for `strata mount DIR`.
    for (const project of config.projects) if (project.unmounted !== true) runners.set(project.projectId, new ProjectRunner(project, runnerDeps));
    await Promise.all([...runners.values()].map((runner) => runner.start()));
    return daemon;
  } catch (error) {
    await cleanup();
    throw error;
  }
}
