// Shared setup for the daemon and watch-mode tests: a real daemon (in-process, port 0, its own temp
// home) watching a real temp directory, real tools run against that directory as async child
// processes with timeouts, and the results read back over the daemon's real HTTP API.

import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { type RunningDaemon, startDaemon } from '../daemon/daemon.js';
import type { ProjectStatus } from '../daemon/project-runner.js';
import type { WatchOptions } from '../daemon/watch/host.js';
import type { Entry, VersionRecord } from '../engine/types.js';

export interface ToolResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion (async, never execSync); rejects on timeout or a non-zero exit. */
export function sh(
  command: string,
  args: string[],
  options: { cwd?: string; timeoutMs?: number; input?: string; allowFail?: boolean; env?: NodeJS.ProcessEnv } = {},
): Promise<ToolResult> {
  return new Promise((resolve, reject) => {
    const stdin = options.input === undefined ? 'ignore' : 'pipe';
    const child = spawn(command, args, { cwd: options.cwd, stdio: [stdin, 'pipe', 'pipe'], env: options.env ?? { ...process.env, GIT_TERMINAL_PROMPT: '0' } });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} timed out`));
    }, options.timeoutMs ?? 20_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code !== 0 && options.allowFail !== true) reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${stderr}`));
      else resolve({ code, stdout, stderr });
    });
    if (child.stdin) {
      // A tool that exits without reading its input reports its own failure through its exit code.
      child.stdin.on('error', () => undefined);
      child.stdin.end(options.input);
    }
  });
}

/** Polls `check` until it returns a non-undefined value or the timeout passes. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface WatchedProject {
  daemon: RunningDaemon;
  home: string;
  dir: string;
  projectId: string;
  api<T>(method: string, path: string, body?: unknown): Promise<T>;
  /** newest first */
  history(path: string): Promise<VersionRecord[]>;
  /** every path with its current entry */
  tree(): Promise<Map<string, Entry>>;
  read(path: string): Promise<string>;
  status(): Promise<ProjectStatus>;
  /** waits until nothing is pending (settle timers, pipeline, deletions) and stays so for a moment */
  idle(timeoutMs?: number): Promise<void>;
  restart(): Promise<void>;
  stop(): Promise<void>;
  dispose(): Promise<void>;
}

/**
 * The end of a test that put a tmpfs of its own (`disk`) under a watched project's home or directory:
 * the daemon stops, the tmpfs is unmounted, and only then is everything removed (dispose() would
 * otherwise remove the directory the tmpfs is mounted on).
 */
export async function disposeWithDisk(w: WatchedProject | undefined, disk: string | null): Promise<void> {
  try {
    await w?.stop();
  } finally {
    if (disk !== null) await sh('umount', ['-l', disk], { allowFail: true });
    await w?.dispose();
  }
}

/** `logger`: where the daemon logs (default: silent, or STRATA_TEST_LOG's level on stderr). */
export async function watchProject(options: { watch?: WatchOptions; prepare?: (dir: string) => Promise<void>; logger?: pino.Logger } = {}): Promise<WatchedProject> {
  const root = await mkdtemp(join(tmpdir(), 'strata-watch-'));
  const home = join(root, 'home');
  const dir = join(root, 'project');
  const logger = options.logger ?? pino({ level: process.env['STRATA_TEST_LOG'] ?? 'silent' });
  const watch: WatchOptions = { settleMs: 100, ...options.watch };
  await sh('mkdir', ['-p', dir]);
  await options.prepare?.(dir);
  let daemon = await startDaemon({ home, listen: '127.0.0.1:0', logger, watch });
  const { project } = await daemon.addProject({ dir, mode: 'watch' });
  const projectId = project.projectId;

  const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${daemon.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${daemon.owner.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path} → ${response.status}: ${text}`);
    return (text === '' ? undefined : JSON.parse(text)) as T;
  };
  const p = (suffix: string) => `/v1/projects/${projectId}${suffix}`;
  const handle: WatchedProject = {
    get daemon() {
      return daemon;
    },
    home,
    dir,
    projectId,
    api,
    async history(path) {
      const page = await api<{ items: VersionRecord[] }>('GET', p(`/history?path=${encodeURIComponent(path)}&limit=1000`));
      return page.items;
    },
    async tree() {
      const snapshot = await api<{ snapshotId: string }>('POST', p('/fs/snapshots'), { message: 'test' });
      const entries = new Map<string, Entry>();
      let cursor: string | undefined;
      do {
        const page = await api<{ items: Entry[]; nextCursor?: string }>(
          'GET',
          p(`/fs/snapshots/${snapshot.snapshotId}/entries?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
        );
        for (const entry of page.items) entries.set(entry.path, entry);
        cursor = page.nextCursor;
      } while (cursor);
      return entries;
    },
    async read(path) {
      const response = await fetch(`${daemon.url}${p(`/fs/read?path=${encodeURIComponent(path)}`)}`, {
        headers: { authorization: `Bearer ${daemon.owner.apiKey}` },
      });
      if (!response.ok) throw new Error(`read ${path} → ${response.status}`);
      return response.text();
    },
    async status() {
      const status = await api<{ projects: ProjectStatus[] }>('GET', '/v1/daemon/status');
      return status.projects.find((s) => s.projectId === projectId)!;
    },
    async idle(timeoutMs = 15_000) {
      let quietSince = 0;
      await waitFor(
        'the daemon to go idle',
        async () => {
          const s = await handle.status();
          const busy = s.pending > 0 || s.scan?.finished === false;
          if (busy) quietSince = 0;
          else if (quietSince === 0) quietSince = Date.now();
          // Idle for longer than the settle delay: no event is still on its way.
          return !busy && Date.now() - quietSince > 300 ? true : undefined;
        },
        timeoutMs,
      );
    },
    async restart() {
      await daemon.stop();
      daemon = await startDaemon({ home, listen: '127.0.0.1:0', logger, watch });
    },
    async stop() {
      await daemon.stop();
    },
    async dispose() {
      try {
        await daemon.stop();
      } finally {
        await rm(root, { recursive: true, force: true });
      }
    },
  };
  return handle;
}
