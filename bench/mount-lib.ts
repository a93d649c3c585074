// Shared by the mount benchmarks: a `strata mount` child process (the compiled CLI, as users run it)
// and a bindfs mount of a plain directory on the same disk — the C passthrough we compare against.

import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI_MAIN, nodeEnv, nodeFlags } from './lib/env.js';
import { run } from './lib/proc.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface MountProc {
  child: ChildProcess;
  dir: string;
  url: string;
  apiKey: string;
  /** resolves once nothing is pending (every capture durable) */
  idle(timeoutMs: number): Promise<void>;
  /** per-operation counts and times, logged by the mount at stop (STRATA_MOUNT_OPSTATS=1) */
  stop(): Promise<Record<string, { n: number; ms: number; avgUs: number }> | null>;
  /** kernel requests by kind, from the same log line (after stop) */
  requests: Record<string, number> | null;
}

export async function startMount(home: string, dir: string, extraEnv: NodeJS.ProcessEnv = {}): Promise<MountProc> {
  // the flags bin/strata runs `strata mount` with, so the benchmark measures what users run
  const child = spawn(process.execPath, [...nodeFlags('mount'), CLI_MAIN, 'mount', dir, '--home', home, '--listen', '127.0.0.1:0'], {
    env: { ...nodeEnv(), STRATA_LOG_LEVEL: process.env['STRATA_LOG_LEVEL'] ?? 'info', STRATA_MOUNT_OPSTATS: '1', ...extraEnv },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`mount did not start:\n${stderr}`)), 60_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      // STRATA_BENCH_MOUNT_LOG=FILE keeps the daemon's log for a run that went wrong
      if (process.env['STRATA_BENCH_MOUNT_LOG']) appendFileSync(process.env['STRATA_BENCH_MOUNT_LOG'], chunk);
      const match = /^listening on (http:\/\/\S+)$/m.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once('exit', (code) => reject(new Error(`mount exited ${code}:\n${stderr}`)));
  });
  const apiKey = readFileSync(join(home, 'secrets', 'local-owner.key'), 'utf8').trim();
  const status = async () => {
    const response = await fetch(`${url}/v1/daemon/status`, { headers: { authorization: `Bearer ${apiKey}` } });
    return (await response.json()) as { projects: Array<{ pending: number; state: string }> };
  };
  // A project host that failed to mount leaves the daemon up: an untar would then measure the plain
  // directory underneath. Refuse to measure anything but a mounted project.
  const states = (await status()).projects.map((p) => p.state);
  if (states.length === 0 || states.some((state) => state !== 'mounted')) {
    child.kill('SIGTERM');
    throw new Error(`the mount is not up (project states: ${states.join(', ')}):\n${stderr}`);
  }
  const proc: MountProc = {
    child,
    dir,
    url,
    apiKey,
    requests: null,
    async idle(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const s = await status();
        if (s.projects.every((p) => p.pending === 0)) return;
        if (Date.now() > deadline) throw new Error('mount did not become idle');
        await sleep(20);
      }
    },
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            child.kill('SIGKILL');
          }, 60_000);
          child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      await run('fusermount', ['-uz', dir]).catch(() => undefined);
      const line = stderr.split('\n').find((l) => l.includes('mount: operation stats'));
      if (line === undefined) return null;
      const parsed = JSON.parse(line) as { ops: Record<string, { n: number; ms: number; avgUs: number }>; requests?: Record<string, number> };
      proc.requests = parsed.requests ?? null;
      return parsed.ops;
    },
  };
  return proc;
}

export interface Bindfs {
  dir: string;
  stop(): Promise<void>;
}

/** bindfs SRC MNT (Debian's package: libfuse2, multithreaded), optionally with extra -o options. */
export async function startBindfs(src: string, dir: string, options: string[] = []): Promise<Bindfs> {
  await run('bindfs', [...(options.length > 0 ? ['-o', options.join(',')] : []), src, dir]);
  return {
    dir,
    async stop() {
      await run('fusermount', ['-u', dir]).catch(() => run('fusermount', ['-uz', dir]));
    },
  };
}

/**
 * CPU time (ms) a process has used so far, by thread name (`comm`): for the mount, MainThread is the
 * thread serving /dev/fuse, WorkerThread the worker threads (captures, hashing), V8Worker V8's helpers
 * (parallel scavenges, concurrent marking), libuv-worker the thread pool. Linux only; {} elsewhere.
 */
export function cpuByThread(pid: number): Record<string, number> {
  const ticksPerMs = 100 / 1000; // USER_HZ, 100 on Linux
  const out: Record<string, number> = {};
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tasks) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      // Fields after the parenthesised name; utime and stime are fields 14 and 15 of the whole line.
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ticks = Number(fields[11]) + Number(fields[12]);
      out[name] = (out[name] ?? 0) + ticks / ticksPerMs;
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** after − before, per thread name, dropping threads that used nothing. */
export function cpuDelta(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, ms] of Object.entries(after)) {
    const used = ms - (before[name] ?? 0);
    if (used > 0) out[name] = used;
  }
  return out;
}

