// A `strata daemon` child process for the watch benchmarks: started from the compiled CLI with
// STRATA_LOG_LEVEL=debug, so each durable version is one log line with its time; status over HTTP;
// CPU and memory from /proc.

import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { CLI_MAIN, nodeEnv, nodeFlags } from './lib/env.js';

export interface VersionLine {
  path: string;
  time: number;
}

export interface DaemonProc {
  child: ChildProcess;
  url: string;
  apiKey: string;
  /** every 'versioned' log line so far */
  versions: VersionLine[];
  status(): Promise<{ projects: Array<{ pending: number; scan: { finished: boolean; done: number; total: number } | null; captured: number }> }>;
  /** waits until the scan finished and nothing is pending */
  idle(timeoutMs: number, onProgress?: (done: number, total: number) => void): Promise<void>;
  /** user+system CPU seconds so far */
  cpuSeconds(): number;
  rssBytes(): number;
  peakRssBytes(): number;
  stop(): Promise<void>;
}

const CLK_TCK = 100;

export function initProject(home: string, dir: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_MAIN, 'init', dir, '--home', home, '--json'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr!.on('data', (c: Buffer) => {
      err += c.toString();
    });
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`strata init failed: ${err}`))));
  });
}

/**
 * `logLevel`: 'debug' (the default) gives `versions`; 'info' is what users run, for benchmarks that
 * time whole phases: at debug a clone of 5,000 files logs a line per file, which the daemon formats
 * and this process parses, both on the same two cores as the phase timed. BENCH_DAEMON_LOGS keeps debug.
 */
export async function startDaemonProc(home: string, logLevel: 'debug' | 'info' = 'debug'): Promise<DaemonProc> {
  const level = process.env['BENCH_DAEMON_LOGS'] === undefined ? logLevel : 'debug';
  // the flags systemd/strata-daemon.service and bin/strata run it with (see docs/design.md §9)
  const child = spawn(process.execPath, [...nodeFlags('daemon'), CLI_MAIN, 'daemon', '--home', home, '--listen', '127.0.0.1:0'], {
    env: { ...nodeEnv(), STRATA_LOG_LEVEL: level },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const versions: VersionLine[] = [];
  // BENCH_DAEMON_LOGS=DIR keeps each daemon's log (DIR/<home's name>.log) to time phases afterwards.
  const logDir = process.env['BENCH_DAEMON_LOGS'];
  if (logDir !== undefined) child.stderr!.pipe(createWriteStream(join(logDir, `${basename(home)}.log`)));
  let buffer = '';
  let url = '';
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('daemon did not start')), 60_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      let nl = buffer.indexOf('\n');
      while (nl !== -1) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        nl = buffer.indexOf('\n');
        const listening = /^listening on (http:\/\/\S+)$/.exec(line);
        if (listening) {
          url = listening[1]!;
          clearTimeout(timer);
          resolve();
          continue;
        }
        if (!line.startsWith('{')) continue;
        const parsed = JSON.parse(line) as { msg?: string; path?: string; time?: number };
        if (parsed.msg === 'versioned' && parsed.path && parsed.time) versions.push({ path: parsed.path, time: parsed.time });
      }
    });
    child.once('exit', (code) => reject(new Error(`daemon exited ${code}`)));
  });
  await ready;
  const apiKey = readFileSync(join(home, 'secrets', 'local-owner.key'), 'utf8').trim();
  const proc: DaemonProc = {
    child,
    url,
    apiKey,
    versions,
    async status() {
      const response = await fetch(`${url}/v1/daemon/status`, { headers: { authorization: `Bearer ${apiKey}` } });
      return (await response.json()) as Awaited<ReturnType<DaemonProc['status']>>;
    },
    async idle(timeoutMs, onProgress) {
      const deadline = Date.now() + timeoutMs;
      let quiet = 0;
      for (;;) {
        const p = (await proc.status()).projects[0]!;
        if (p.scan) onProgress?.(p.scan.done, p.scan.total);
        const busy = p.pending > 0 || p.scan?.finished === false;
        quiet = busy ? 0 : quiet + 1;
        if (quiet >= 3) return;
        if (Date.now() > deadline) throw new Error('daemon did not go idle');
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    },
    cpuSeconds() {
      const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
    },
    rssBytes: () => statusKb(child.pid!, 'VmRSS') * 1024,
    peakRssBytes: () => statusKb(child.pid!, 'VmHWM') * 1024,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
  return proc;
}

function statusKb(pid: number, field: string): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) : 0;
}
