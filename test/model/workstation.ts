// Process control for the model tests (test/model/): one workstation = one home, one project
// directory and a real `strata daemon` child process (watch or mount mode), driven the way a user
// drives it — the real filesystem, the compiled CLI — and read back over the daemon's control API.
// Nothing here knows about the model: the sync model (issue 38, several workstations and a server)
// reuses it with its own `init` arguments.

import type { ChildProcess } from 'node:child_process';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { baseEnv, type RunResult, runCli, startListening } from '../cli-harness.js';
import { readDaemonConfig, writeDaemonConfig } from '../../daemon/config.js';
import { sh, waitFor } from '../daemon-harness.js';

export type CaptureMode = 'watch' | 'mount';

export interface ProjectStatusView {
  projectId: string;
  state: string;
  pending: number;
  scan?: { finished: boolean } | null;
  incoming?: { busy: boolean } | null;
  mount?: { dirty: number } | null;
  warnings: string[];
  errors: Array<{ path: string | null; code: string; message: string }>;
  massDeleteGuard: { tripped: boolean };
}

export interface Workstation {
  readonly root: string;
  readonly home: string;
  /** the bound project's directory and id (the sync model binds a new one each sequence: bind) */
  readonly dir: string;
  readonly mode: CaptureMode;
  readonly projectId: string;
  readonly env: NodeJS.ProcessEnv;
  /** the daemon runs */
  readonly running: boolean;
  /** starts the daemon and waits until the project is watched (scan under way is fine) or mounted */
  start(): Promise<void>;
  /** SIGKILL, as a crash; a mount is left for the next start to clean up, as after a real crash */
  kill9(): Promise<void>;
  /** SIGTERM and wait (a mount unmounts) */
  stop(): Promise<void>;
  /** the compiled CLI, in the project directory (project discovery as a user has it) */
  cli(args: string[], options?: { timeoutMs?: number; input?: string }): Promise<RunResult>;
  api<T>(method: string, path: string, body?: unknown): Promise<T>;
  /** a GET whose answer is bytes (fs/read) */
  bytes(path: string): Promise<Buffer>;
  /** `/v1/projects/ID` + suffix */
  projectPath(suffix: string): string;
  status(): Promise<ProjectStatusView>;
  /**
   * Waits until nothing is pending (settle timers, captures, deletions, changes on their way to disk,
   * the mount's dirty files) and it stays so for longer than the settle delays.
   */
  quiet(timeoutMs?: number): Promise<void>;
  /** the daemon's stderr since its last start */
  log(): string;
  /**
   * Binds DIR with `strata ARGS --json` (init or clone; through the daemon when it runs) and makes it
   * this workstation's project.
   */
  bind(dir: string, args: string[]): Promise<void>;
  /**
   * Takes the bound project out of daemon.json (the daemon stopped: it owns the file while it runs)
   * and removes its directory, so the next start runs no trace of it: the sync model's world serves
   * one project per sequence without a new home each time.
   */
  forget(): Promise<void>;
  dispose(): Promise<void>;
}

export interface WorkstationOptions {
  root: string;
  mode: CaptureMode;
  /** extra environment for the CLI and the daemon */
  env?: Record<string, string>;
  /** how long quiet must last (default 600 ms: above watch mode's 500 ms delete settle) */
  quietMs?: number;
  /**
   * The command that binds the directory (`--json` is added), default `init DIR --mode MODE`; null:
   * none yet (the sync model binds each sequence's project itself with `bind`).
   */
  bind?: ((dir: string) => string[]) | null;
}

/** A fresh home and project directory under `root`, bound with `strata init --mode MODE` (the daemon is not started). */
export async function createWorkstation(options: WorkstationOptions): Promise<Workstation> {
  const { root, mode } = options;
  const home = join(root, 'home');
  let dir = join(root, 'project');
  let projectId = '';
  const env: NodeJS.ProcessEnv = { ...baseEnv(join(root, 'config')), STRATA_HOME: home, STRATA_LOG_LEVEL: 'info', ...options.env };
  let child: ChildProcess | null = null;
  let url = '';
  let stderr: () => string = () => '';
  let apiKey = '';
  const quietMs = options.quietMs ?? 600;

  const exited = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;
  const waitExit = (c: ChildProcess, ms: number) =>
    new Promise<void>((resolve) => {
      if (exited(c)) return resolve();
      const timer = setTimeout(() => c.kill('SIGKILL'), ms);
      c.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
    });

  const ws: Workstation = {
    root,
    home,
    get dir() {
      return dir;
    },
    mode,
    get projectId() {
      return projectId;
    },
    env,
    get running() {
      return child !== null && !exited(child);
    },
    async start() {
      if (ws.running) return;
      const started = await startListening(['daemon', '--listen', '127.0.0.1:0'], env, 90_000);
      child = started.child;
      url = started.url;
      stderr = started.stderr;
      apiKey = (await readFile(join(home, 'secrets', 'local-owner.key'), 'utf8')).trim();
      await waitFor(
        'the project to be watched or mounted',
        async () => {
          const s = await ws.status();
          if (s.state === 'error') throw new Error(`project state error: ${JSON.stringify(s)}`);
          return s.state === 'watching' || s.state === 'scanning' || s.state === 'mounted' || s.state === 'guarded' ? true : undefined;
        },
        90_000,
      );
    },
    async kill9() {
      if (child === null) return;
      const c = child;
      c.kill('SIGKILL');
      await waitExit(c, 10_000);
    },
    async stop() {
      if (child === null || exited(child)) return;
      const c = child;
      c.kill('SIGTERM');
      await waitExit(c, 60_000);
    },
    cli(args, opts = {}) {
      return runCli(args, env, { cwd: dir, timeoutMs: opts.timeoutMs ?? 90_000, ...(opts.input === undefined ? {} : { input: opts.input }) });
    },
    async api<T>(method: string, path: string, body?: unknown): Promise<T> {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(60_000),
      });
      const text = await response.text();
      if (!response.ok) throw new Error(`${method} ${path} → ${response.status}: ${text}`);
      return (text === '' ? undefined : JSON.parse(text)) as T;
    },
    async bytes(path) {
      const response = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${apiKey}` }, signal: AbortSignal.timeout(60_000) });
      if (!response.ok) throw new Error(`GET ${path} → ${response.status}: ${await response.text()}`);
      return Buffer.from(await response.arrayBuffer());
    },
    projectPath: (suffix) => `/v1/projects/${projectId}${suffix}`,
    async status() {
      const status = await ws.api<{ projects: ProjectStatusView[] }>('GET', '/v1/daemon/status');
      const project = status.projects.find((p) => p.projectId === projectId);
      if (project === undefined) throw new Error(`project ${projectId} missing from the daemon's status`);
      return project;
    },
    async quiet(timeoutMs = 120_000) {
      // A mount hears of a close only after the tool's close() returned (the kernel's RELEASE), and
      // a watcher of an event ~settle delay later: "nothing pending" must hold for a while.
      let quietSince = 0;
      await waitFor(
        'the workstation to go quiet',
        async () => {
          const s = await ws.status();
          const busy =
            s.pending > 0 ||
            s.scan?.finished === false ||
            s.incoming?.busy === true ||
            (s.mount !== null && s.mount !== undefined && s.mount.dirty > 0) ||
            s.state === 'scanning' ||
            s.state === 'starting';
          if (busy) quietSince = 0;
          else if (quietSince === 0) quietSince = Date.now();
          return !busy && Date.now() - quietSince > quietMs ? true : undefined;
        },
        timeoutMs,
      );
    },
    log: () => stderr(),
    async bind(to, args) {
      await mkdir(to, { recursive: true });
      const init = await runCli([...args, '--json'], env, { timeoutMs: 90_000 });
      if (init.code !== 0) throw new Error(`strata ${args[0]} exited ${init.code}: ${init.stderr}`);
      dir = to;
      projectId = (JSON.parse(init.stdout) as { projectId: string }).projectId;
    },
    async forget() {
      if (ws.running) throw new Error('forget: the daemon runs (it owns daemon.json)');
      if (projectId === '') return;
      const config = readDaemonConfig(home);
      await writeDaemonConfig(home, { ...config, projects: config.projects.filter((p) => p.projectId !== projectId) });
      if (mode === 'mount') await sh('fusermount', ['-uz', dir], { allowFail: true, timeoutMs: 10_000 }).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
      projectId = '';
    },
    async dispose() {
      try {
        if (child !== null && !exited(child)) {
          child.kill('SIGTERM');
          await waitExit(child, 30_000);
        }
      } finally {
        if (mode === 'mount') await sh('fusermount', ['-uz', dir], { allowFail: true, timeoutMs: 10_000 }).catch(() => undefined);
        await rm(root, { recursive: true, force: true }).catch(() => undefined);
      }
    },
  };
  if (options.bind !== null) await ws.bind(dir, options.bind?.(dir) ?? ['init', dir, '--mode', mode]);
  return ws;
}
