// What the sync benchmarks (bench/sync.ts) share: a `strata serve` on loopback, a daemon's sync
// status, a tree of small files, a big random file, an rsync daemon (the peer), and the bytes that
// crossed the loopback interface (the same measure for rsync and for Strata).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DaemonProc } from '../watch-daemon-proc.js';
import { CLI_MAIN, freshDir, nodeEnv, nodeFlags } from './env.js';
import { timed } from './proc.js';

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const MiB = 1024 * 1024;

export function cli(args: string[], env: NodeJS.ProcessEnv = {}): string {
  return execFileSync(process.execPath, [CLI_MAIN, ...args], { env: { ...nodeEnv(), ...env }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

export interface Server {
  url: string;
  apiKey: string;
  child: ChildProcess;
  newProject(name: string): string;
  stop(): Promise<void>;
}

export async function startServer(root: string): Promise<Server> {
  const home = join(root, 'server');
  const apiKey = (JSON.parse(cli(['admin', 'bootstrap', '--home', home, '--json'])) as { apiKey: string }).apiKey;
  const child = spawn(process.execPath, [...nodeFlags('serve'), CLI_MAIN, 'serve', '--home', home, '--listen', '127.0.0.1:0', '--quiet'], {
    env: nodeEnv(),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      // The plain line, or the msg of a JSON log record (the default on a pipe): the URL ends at a quote or the line's end.
      const match = /listening on (http:\/\/[^\s"]+)[\s"]/.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`server exited ${code}: ${stderr}`)));
  });
  return {
    url,
    apiKey,
    child,
    newProject: (name) => (JSON.parse(cli(['projects', 'create', name, '--json'], { STRATA_SERVER_URL: url, STRATA_API_KEY: apiKey })) as { projectId: string }).projectId,
    stop: async () => {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

export interface SyncDoc {
  projects: Array<{
    projectId: string;
    sync: { inSync: boolean; queue: { versions: number }; pushed: number; uploadedBytes: number; downloadedBytes: number; state: string };
  }>;
}

export async function syncStatus(daemon: DaemonProc): Promise<SyncDoc> {
  const response = await fetch(`${daemon.url}/v1/daemon/sync`, { headers: { authorization: `Bearer ${daemon.apiKey}` } });
  return (await response.json()) as SyncDoc;
}

export async function untilInSync(daemon: DaemonProc, timeoutMs: number, onTick?: () => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let streak = 0;
  while (Date.now() < deadline) {
    onTick?.();
    const doc = await syncStatus(daemon);
    streak = doc.projects.length > 0 && doc.projects.every((p) => p.sync.inSync) ? streak + 1 : 0;
    if (streak >= 2) return;
    await sleep(100);
  }
  throw new Error('not in sync in time');
}

export async function smallFiles(dir: string, count: number): Promise<number> {
  let bytes = 0;
  for (let i = 0; i < count; i++) {
    const sub = join(dir, `d${Math.floor(i / 500)}`);
    if (i % 500 === 0) await mkdir(sub, { recursive: true });
    const content = `file ${i}\n${'x'.repeat(200 + ((i * 7919) % 3800))}\n`;
    bytes += content.length;
    await writeFile(join(sub, `f${i}.txt`), content);
  }
  return bytes;
}

export interface RsyncDaemon {
  /** `rsync -a --stats [extra] SOURCE/` to the daemon's module: seconds, and the bytes rsync says it sent and received */
  push(source: string, extra?: string[]): Promise<{ seconds: number; sentBytes: number; receivedBytes: number }>;
  stop(): void;
}

/** An rsync daemon on loopback writing into a fresh directory (the peer of a first sync and a re-sync). */
export async function startRsyncDaemon(root: string, name = 'rsync'): Promise<RsyncDaemon> {
  const target = freshDir(`sync-bench-${name}-target`);
  const conf = join(root, `${name}d.conf`);
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  await writeFile(conf, `pid file = ${join(root, `${name}d.pid`)}\nuse chroot = no\n[bench]\npath = ${target}\nread only = no\nuid = root\ngid = root\n`);
  const daemon = spawn('rsync', ['--daemon', '--no-detach', `--config=${conf}`, `--port=${port}`, '--address=127.0.0.1'], { stdio: 'ignore' });
  await sleep(500);
  return {
    async push(source, extra = []) {
      let stdout = '';
      const seconds = await timed(
        () =>
          new Promise<void>((resolve, reject) => {
            const child = spawn('rsync', ['-a', '--stats', ...extra, `${source}/`, `rsync://127.0.0.1:${port}/bench/`], { stdio: ['ignore', 'pipe', 'ignore'] });
            child.stdout.on('data', (chunk: Buffer) => {
              stdout += chunk.toString();
            });
            child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`rsync exited ${code}`))));
          }),
      );
      const figure = (label: string) => Number(new RegExp(`${label}: ([\\d,]+)`).exec(stdout)?.[1]?.replaceAll(',', '') ?? Number.NaN);
      return { seconds, sentBytes: figure('Total bytes sent'), receivedBytes: figure('Total bytes received') };
    },
    stop: () => daemon.kill('SIGTERM'),
  };
}

/** `mib` MiB of random bytes (incompressible, no repeated shards), written 8 MiB at a time. */
export async function randomFile(path: string, mib: number): Promise<void> {
  const handle = await open(path, 'w');
  try {
    for (let done = 0; done < mib; done += 8) await handle.write(randomBytes(Math.min(8, mib - done) * MiB));
  } finally {
    await handle.close();
  }
}

/** Overwrites `bytes` in place at `offset` (as a tool that seeks and writes would). */
export async function overwriteAt(path: string, offset: number, bytes: number): Promise<void> {
  const handle = await open(path, 'r+');
  try {
    await handle.write(randomBytes(bytes), 0, bytes, offset);
  } finally {
    await handle.close();
  }
}

/**
 * Bytes through the loopback interface so far (/proc/net/dev): everything two processes on this
 * machine said to each other, headers included. Measured the same way for rsync and for Strata.
 */
export async function loopbackBytes(): Promise<number> {
  const line = (await readFile('/proc/net/dev', 'utf8')).split('\n').find((l) => l.trim().startsWith('lo:'));
  return Number(line?.trim().split(/\s+/)[1] ?? Number.NaN);
}
