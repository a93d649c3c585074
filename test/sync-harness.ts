// A sync world of real processes on loopback (issue 14): one `strata serve` with a bootstrapped home
// and a project, and workstations — each its own home, directory and `strata daemon` — that link to
// it with the CLI. The server listens on a fixed free port so a test can stop it and start it again
// (offline, a crash) at the same address the workstations know.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { baseEnv, closedPort, parseJson, type RunResult, runCli, startListening, tempDir } from './cli-harness.js';
import { waitFor } from './daemon-harness.js';
import { createTestSchema } from './helpers/postgres.js';
import { startS3Server } from './helpers/s3-server.js';

export interface Workstation {
  name: string;
  home: string;
  dir: string;
  env: NodeJS.ProcessEnv;
  daemon: ChildProcess | null;
  /** what the current (or last) daemon wrote on stderr */
  daemonLog(): string;
  cli(args: string[], options?: { cwd?: string; timeoutMs?: number }): Promise<RunResult>;
  start(): Promise<void>;
  /** SIGTERM and wait (a clean stop) */
  stop(): Promise<void>;
  /** kill -9 */
  kill(): Promise<void>;
  syncStatus(): Promise<SyncProject[]>;
}

/** One reason of a project's sync verdict (daemon/sync/sync-verdict.ts), as `sync status --json` gives it. */
export interface SyncReasonView {
  code: string;
  message: string;
  needsYou: boolean;
}

/** Why a project is not in sync (empty: in sync, or no project). */
export function reasonsOf(project: SyncProject | undefined): SyncReasonView[] {
  return (project?.sync as { reasons?: SyncReasonView[] } | undefined)?.reasons ?? [];
}

export interface SyncProject {
  projectId: string;
  dir: string;
  sync: {
    state: string;
    inSync: boolean;
    readOnly: boolean;
    queue: { versions: number; bytes: number };
    conflicts: Array<{ path: string; of: string }>;
    held: { deletes: number; files: number; recent?: number } | null;
    lastError: { message: string } | null;
    pushed: number;
    pulled: number;
    uploadedBytes: number;
  };
}

export interface SyncWorld {
  root: string;
  serverHome: string;
  url: string;
  apiKey: string;
  projectId: string;
  /** the CLI against the server, as its owner */
  serverCli(args: string[]): Promise<RunResult>;
  startServer(): Promise<void>;
  stopServer(signal?: NodeJS.Signals): Promise<void>;
  workstation(name: string): Workstation;
  dispose(): Promise<void>;
}

/** A Postgres schema and an s3rver of the world's own, and the server settings that name them. */
async function sharedStorage(): Promise<{ env: NodeJS.ProcessEnv; dispose(): Promise<void> }> {
  const schema = await createTestSchema('strata_sync');
  const s3 = await startS3Server().catch(async (error: unknown) => {
    await schema.drop();
    throw error;
  });
  return {
    env: {
      STRATA_DATABASE_URL: schema.url,
      STRATA_OBJECTS_URL: s3.url,
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
      STRATA_PEPPER: randomBytes(32).toString('hex'),
    },
    async dispose() {
      await s3.close();
      await schema.drop();
    },
  };
}

const stopped = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });

async function stopChild(child: ChildProcess | null, signal: NodeJS.Signals): Promise<void> {
  if (child === null) return;
  child.kill(signal);
  const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await stopped(child);
  clearTimeout(killer);
}

/** Where the server keeps its data: its home (SQLite + directory), or Postgres and an S3 server on loopback. */
export type ServerStorage = 'embedded' | 'postgres+s3';
export const SERVER_STORAGES: readonly ServerStorage[] = ['embedded', 'postgres+s3'];

/** `workstationEnv`: added to every workstation's CLI and daemon environment. */
export async function openSyncWorld(prefix = 'strata-sync-', options: { serveEnv?: NodeJS.ProcessEnv; storage?: ServerStorage; workstationEnv?: NodeJS.ProcessEnv } = {}): Promise<SyncWorld> {
  const temp = await tempDir(prefix);
  const root = temp.path;
  const storage = options.storage === 'postgres+s3' ? await sharedStorage() : null;
  const base = baseEnv(join(root, 'config'));
  // The server's storage settings go to the commands that open its home (bootstrap, serve), never to a
  // workstation's: its daemon and its `fsck --home` are on the workstation's own home.
  const serverBase = { ...base, ...(storage?.env ?? {}) };
  const serverHome = join(root, 'server');
  const boot = await runCli(['admin', 'bootstrap', '--home', serverHome, '--json'], serverBase);
  if (boot.code !== 0) throw new Error(`bootstrap: ${boot.stderr}`);
  const apiKey = parseJson<{ apiKey: string }>(boot).apiKey;
  const port = await closedPort();
  const url = `http://127.0.0.1:${port}`;
  let server: ChildProcess | null = null;
  const workstations: Workstation[] = [];
  const serverEnv = { ...base, STRATA_SERVER_URL: url, STRATA_API_KEY: apiKey };

  const world: SyncWorld = {
    root,
    serverHome,
    url,
    apiKey,
    projectId: '',
    serverCli: (args) => runCli(args, serverEnv, { timeoutMs: 60_000 }),
    async startServer() {
      server = (await startListening(['serve', '--home', serverHome, '--listen', `127.0.0.1:${port}`, '--quiet'], { ...serverBase, ...options.serveEnv }, 30_000)).child;
    },
    async stopServer(signal = 'SIGTERM') {
      await stopChild(server, signal);
      server = null;
    },
    workstation(name) {
      const home = join(root, `home-${name}`);
      const dir = join(root, name);
      const env = { ...base, ...options.workstationEnv, STRATA_HOME: home, STRATA_WORKSTATION: name, STRATA_API_KEY: apiKey };
      let log = () => '';
      const ws: Workstation = {
        name,
        home,
        dir,
        env,
        daemon: null,
        daemonLog: () => log(),
        cli: (args, options = {}) => runCli(args, env, { timeoutMs: options.timeoutMs ?? 60_000, ...(options.cwd ? { cwd: options.cwd } : {}) }),
        async start() {
          const started = await startListening(['daemon', '--listen', '127.0.0.1:0'], env, 30_000);
          ws.daemon = started.child;
          log = started.stderr;
        },
        async stop() {
          await stopChild(ws.daemon, 'SIGTERM');
          ws.daemon = null;
        },
        async kill() {
          await stopChild(ws.daemon, 'SIGKILL');
          ws.daemon = null;
        },
        async syncStatus() {
          const result = await ws.cli(['sync', 'status', '--json']);
          if (result.code !== 0) throw new Error(`sync status on ${name}: ${result.stderr}`);
          return parseJson<{ projects: SyncProject[] }>(result).projects;
        },
      };
      workstations.push(ws);
      return ws;
    },
    async dispose() {
      await Promise.all(workstations.map((ws) => stopChild(ws.daemon, 'SIGTERM')));
      await stopChild(server, 'SIGTERM');
      await storage?.dispose();
      await temp.remove();
    },
  };
  await world.startServer();
  const created = await world.serverCli(['projects', 'create', 'thesis', '--json']);
  if (created.code !== 0) throw new Error(`projects create: ${created.stderr}`);
  world.projectId = parseJson<{ projectId: string }>(created).projectId;
  return world;
}

/** `strata sync wait` on every workstation, in turn, until all pass together (a change can bounce). */
export async function allInSync(workstations: Workstation[], timeoutS = 120): Promise<void> {
  for (let round = 0; round < 3; round++) {
    for (const ws of workstations) {
      const result = await ws.cli(['sync', 'wait', '--timeout', String(timeoutS), '--json'], { timeoutMs: (timeoutS + 30) * 1000 });
      if (result.code !== 0) throw new Error(`sync wait on ${ws.name} exited ${result.code}: ${result.stderr}`);
    }
  }
}

/** `strata fsck` on every workstation's home and on the server: the failures, with their output (none: clean). */
export async function fsckFailures(world: SyncWorld, workstations: Workstation[]): Promise<string[]> {
  const failures: string[] = [];
  for (const ws of workstations) {
    const result = await ws.cli(['fsck', '--home', ws.home]);
    if (result.code !== 0) failures.push(`${ws.name}: exit ${result.code}\n${result.stdout}${result.stderr}`);
  }
  const server = await world.serverCli(['fsck']);
  if (server.code !== 0) failures.push(`server: exit ${server.code}\n${server.stdout}${server.stderr}`);
  return failures;
}

/** path → content of every file under dir (`.strata` left out). */
export async function treeOf(dir: string): Promise<Record<string, string>> {
  const tree: Record<string, string> = {};
  const walk = async (rel: string): Promise<void> => {
    for (const entry of await readdir(join(dir, rel), { withFileTypes: true })) {
      const path = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (path === '.strata') continue;
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile()) tree[path] = await readFile(join(dir, path), 'utf8');
    }
  };
  await walk('');
  return Object.fromEntries(Object.entries(tree).sort(([a], [b]) => (a < b ? -1 : 1)));
}

export { waitFor };
