// Shared setup for the mount tests: `strata mount DIR` (the compiled CLI) serves a real FUSE mount in
// a CHILD process — never in the vitest worker, so a hang in the filesystem cannot wedge the runner —
// and real tools run against DIR as async child processes with timeouts. Results are read back over
// the daemon's real HTTP API. dispose() always unmounts (`fusermount -uz`), whatever happened.

import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Entry, VersionRecord } from '../engine/types.js';
import { baseEnv, startListening } from './cli-harness.js';
import { sh, waitFor } from './daemon-harness.js';

export { sh, sleep, waitFor } from './daemon-harness.js';

export interface MountedDir {
  root: string;
  home: string;
  dir: string;
  url: string;
  apiKey: string;
  projectId: string;
  child: ChildProcess;
  stderr(): string;
  api<T>(method: string, path: string, body?: unknown): Promise<T>;
  history(path: string): Promise<VersionRecord[]>;
  /** the current entry, or null */
  stat(path: string): Promise<Entry | null>;
  read(path: string): Promise<Buffer>;
  /** waits until the mount has nothing pending */
  idle(timeoutMs?: number): Promise<void>;
  /** SIGTERM and wait for a clean exit (unmounts) */
  stop(): Promise<number | null>;
  dispose(): Promise<void>;
}


/** Lazy unmount that never throws: the last line of every test's cleanup. */
export async function forceUnmount(dir: string): Promise<void> {
  await sh('fusermount', ['-uz', dir], { allowFail: true, timeoutMs: 10_000 }).catch(() => undefined);
}

export async function waitExit(child: ChildProcess, timeoutMs: number): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

/** `root/mnt` is the mount point; `args` go after `strata mount DIR` (e.g. `--import` when the test filled it first). */
export async function mountProject(options: { root?: string; env?: Record<string, string>; args?: string[]; timeoutMs?: number } = {}): Promise<MountedDir> {
  const root = options.root ?? (await mkdtemp(join(tmpdir(), 'strata-mount-')));
  const home = join(root, 'home');
  const dir = join(root, 'mnt');
  const env = { ...baseEnv(join(root, 'config')), STRATA_LOG_LEVEL: 'warn', ...options.env };
  let started: Awaited<ReturnType<typeof startListening>>;
  try {
    started = await startListening(['mount', dir, ...(options.args ?? []), '--home', home, '--listen', '127.0.0.1:0'], env, options.timeoutMs);
  } catch (error) {
    await forceUnmount(dir);
    throw error;
  }
  const { child, url } = started;
  const apiKey = (await readFile(join(home, 'secrets', 'local-owner.key'), 'utf8')).trim();
  const config = JSON.parse(await readFile(join(home, 'daemon.json'), 'utf8')) as { projects: Array<{ projectId: string; dir: string }> };
  const projectId = config.projects[0]!.projectId;

  const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(20_000),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path} → ${response.status}: ${text}`);
    return (text === '' ? undefined : JSON.parse(text)) as T;
  };
  const p = (suffix: string) => `/v1/projects/${projectId}${suffix}`;
  const mounted: MountedDir = {
    root,
    home,
    dir,
    url,
    apiKey,
    projectId,
    child,
    stderr: started.stderr,
    api,
    async history(path) {
      return (await api<{ items: VersionRecord[] }>('GET', p(`/history?path=${encodeURIComponent(path)}&limit=1000`))).items;
    },
    async stat(path) {
      const items = await mounted.history(path);
      const current = items[0];
      if (current === undefined || current.contentHash === null) return null;
      return { path, versionId: current.versionId, contentHash: current.contentHash, size: current.size, timestamp: current.timestamp, executable: current.executable, symlink: current.symlink, dataset: current.dataset };
    },
    async read(path) {
      const response = await fetch(`${url}${p(`/fs/read?path=${encodeURIComponent(path)}`)}`, {
        headers: { authorization: `Bearer ${apiKey}` },
        signal: AbortSignal.timeout(20_000),
      });
      if (!response.ok) throw new Error(`read ${path} → ${response.status}`);
      return Buffer.from(await response.arrayBuffer());
    },
    async idle(timeoutMs = 20_000) {
      // The kernel sends RELEASE after close() has returned to the tool, so right after a shell
      // command exits its last close may not have reached the mount (pending 0, nothing queued yet).
      // Give it longer than the capture settle delay before trusting `pending`.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await waitFor(
        'the mount to capture everything',
        async () => {
          const status = await api<{ projects: Array<{ pending: number }> }>('GET', '/v1/daemon/status');
          return status.projects.every((project) => project.pending === 0) ? true : undefined;
        },
        timeoutMs,
      );
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      return waitExit(child, 30_000);
    },
    async dispose() {
      try {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGKILL');
          await waitExit(child, 10_000);
        }
      } finally {
        await forceUnmount(dir);
        await rm(root, { recursive: true, force: true }).catch(() => undefined);
      }
    },
  };
  return mounted;
}

/** Runs a shell snippet with `cwd` = the mount (async child, timeout). */
export function inMount(mounted: MountedDir, script: string, timeoutMs = 30_000) {
  return sh('bash', ['-euo', 'pipefail', '-c', script], { cwd: mounted.dir, timeoutMs });
}
