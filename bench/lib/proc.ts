// Child processes (the peers: cp, sync, git) and memory measurement.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { now, seconds } from './stats.js';

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  input?: string | Uint8Array;
}

/** Runs a command to completion; rejects with its stderr on a non-zero exit. Resolves stdout. */
export function run(command: string, args: string[], options: RunOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = options.input === undefined ? 'ignore' : 'pipe';
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: [stdin, 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout!.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr!.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolve(Buffer.concat(out).toString('utf8'));
      else reject(new Error(`${command} ${args.join(' ')} failed (${signal ?? code}): ${Buffer.concat(err).toString('utf8').slice(0, 2000)}`));
    });
    if (child.stdin) {
      // A child that exits without reading all its input reports its own failure through its exit code.
      child.stdin.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code !== 'EPIPE') reject(error);
      });
      child.stdin.end(options.input);
    }
  });
}

/** Wall-clock seconds of one command, process start-up included (that is what a user waits for). */
export async function timeRun(command: string, args: string[], options: RunOptions = {}): Promise<number> {
  const start = now();
  await run(command, args, options);
  return seconds(start);
}

/** Wall-clock seconds of `task`. */
export async function timed(task: () => Promise<unknown>): Promise<number> {
  const start = now();
  await task();
  return seconds(start);
}

/**
 * Flushes dirty pages (untimed) so one measurement's writeback does not land in the next one's time.
 */
export async function settleDisk(): Promise<void> {
  await run('sync', []);
}

/** Peak resident set (VmHWM) of a process, in bytes; null if it is gone. */
export function peakRss(pid: number | 'self' = 'self'): number | null {
  return statusField(pid, 'VmHWM');
}

/** Current resident set (VmRSS) of a process, in bytes; null if it is gone. */
export function currentRss(pid: number | 'self' = 'self'): number | null {
  return statusField(pid, 'VmRSS');
}

/** Anonymous memory (RssAnon: heap, buffers, caches), without file pages mapped for reading. */
export function anonRss(pid: number | 'self' = 'self'): number | null {
  return statusField(pid, 'RssAnon');
}

function statusField(pid: number | 'self', field: 'VmHWM' | 'VmRSS' | 'RssAnon'): number | null {
  try {
    const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Resets this process's VmHWM to its current RSS (Linux ≥ 4.0, `echo 5 > clear_refs`); false if refused. */
export function resetPeakRss(): boolean {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

/** Samples this process's RSS every `intervalMs` (20 ms) while a measurement runs. */
export class RssSampler {
  private timer: NodeJS.Timeout | null = null;
  private peak = 0;
  readonly baseline: number;

  constructor(private readonly intervalMs = 20) {
    this.baseline = process.memoryUsage.rss();
  }

  start(): this {
    this.peak = process.memoryUsage.rss();
    this.timer = setInterval(() => {
      const rss = process.memoryUsage.rss();
      if (rss > this.peak) this.peak = rss;
    }, this.intervalMs);
    return this;
  }

  stop(): number {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    return Math.max(this.peak, process.memoryUsage.rss());
  }
}

export const MB = 1e6;
export const MiB = 1024 * 1024;

/** User + system CPU seconds a process has used so far (threads included); null if it is gone. */
export function cpuSecondsOf(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}
