// `strata daemon`: ONE process, ONE engine. It opens the local engine of a home, serves the control
// API on loopback with the local owner key, and runs a project host for every project in daemon.json
// (daemon/host.ts). Hosts feed the engine in-process; the API is for the CLI and other local clients.

import { mkdir } from 'node:fs/promises';
import { isIP } from 'node:net';
import pino, { type Logger } from 'pino';
import { buildApp } from '../control-api/app.js';
import type { AccessDeps } from '../engine/access/deps.js';
import { StrataError } from '../engine/errors.js';
import { createIdGenerator } from '../engine/ids.js';
import { type LocalEngine, openLocalEngine } from '../engine/local.js';
import { isLoopbackAddress, parseListen } from '../server/serve.js';
import { loadPepper, resolveEnvironment } from '../server/secrets.js';
import { type DaemonConfig, daemonLayout, readDaemonConfig, writeDaemonConfig } from './config.js';
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
}

export interface DaemonStatus {
  daemon: { pid: number; startedAt: string; uptimeSeconds: number; listen: string; url: string; home: string };
  projects: ProjectStatus[];
}

export interface RunningDaemon {
  url: string;
  home: string;
  owner: LocalOwner;
  status(): DaemonStatus;
  addProject(input: RegisterInput): Promise<{ project: RegisteredProject; status: ProjectStatus }>;
  project(projectId: string): ProjectRunner | undefined;
  stop(): Promise<void>;
}

export async function startDaemon(options: DaemonOptions): Promise<RunningDaemon> {
  const { home } = options;
  const layout = daemonLayout(home);
  // Logs go to stderr (stdout is the CLI's); STRATA_LOG_LEVEL=debug adds a line per captured version.
  const logger = options.logger ?? pino({ level: process.env['STRATA_LOG_LEVEL'] ?? 'info' }, pino.destination(2));
  const lock: DaemonLock = await acquireDaemonLock(layout.dir);
  const cleanups: Array<() => Promise<void> | void> = [() => lock.release()];
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
    await mkdir(layout.staging, { recursive: true, mode: 0o700 });

    const runners = new Map<string, ProjectRunner>();
    const runnerDeps = {
      engine: local.engine,
      actor: owner.actor,
      state,
      logger,
      home,
      stagingDir: layout.staging,
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
        if (runner && JSON.stringify(runner.config.sync) !== JSON.stringify(project.sync)) {
          // Linked to a server now: the project restarts with its sync.
          await runner.stop();
          runners.delete(project.projectId);
          runner = undefined;
        } else if (runner && project.sync !== undefined) {
          // Linked again (perhaps with a new key: a 401 pauses sync until then).
          await runner.restartSync();
        }
        if (!runner) {
          const { projectId, dir, mode, sync } = project;
          runner = new ProjectRunner(sync === undefined ? { projectId, dir, mode } : { projectId, dir, mode, sync }, runnerDeps);
          runners.set(project.projectId, runner);
          await runner.start();
        }
        return { project, status: runner.status() };
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
      engine: local.engine,
      repository: local.repository,
      pepper,
      environment,
      clock: local.clock,
      logger: false,
      loopbackOnly: true,
      extraRoutes: (instance, deps) => registerDaemonRoutes(instance, deps, daemon),
    });
    cleanups.push(() => app.close());
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

    for (const project of config.projects) runners.set(project.projectId, new ProjectRunner(project, runnerDeps));
    await Promise.all([...runners.values()].map((runner) => runner.start()));
    return daemon;
  } catch (error) {
    await cleanup();
    throw error;
  }
}
