// Runs the compiled CLI (dist/cli/main.js) as a child process, the way users and CI scripts do, and
// a real `strata serve` next to it. No in-process shortcuts: exit codes, stdout/stderr separation
// and signal handling are what these tests are about.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';

// This file runs from test/ (vitest) and from dist/test/ (the benchmarks that reuse the harnesses).
const parent = resolve(import.meta.dirname, '..');
export const REPO = basename(parent) === 'dist' ? dirname(parent) : parent;
export const MAIN = join(REPO, 'dist', 'cli', 'main.js');

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stdoutBytes: Buffer;
  stderr: string;
}

export interface RunOptions {
  env?: Record<string, string | undefined>;
  input?: string | Buffer;
  timeoutMs?: number;
  cwd?: string;
}

/** A clean environment: no STRATA_* from the developer's shell, no personal config file. */
export function baseEnv(configHome: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('STRATA_') && value !== undefined) env[key] = value;
  }
  env['XDG_CONFIG_HOME'] = configHome;
  env['NO_COLOR'] = '1';
  return env;
}

export function runCli(args: string[], env: NodeJS.ProcessEnv, options: RunOptions = {}): Promise<RunResult> {
  const childEnv: NodeJS.ProcessEnv = { ...env };
  for (const [key, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete childEnv[key];
    else childEnv[key] = value;
  }
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env: childEnv, stdio: ['pipe', 'pipe', 'pipe'], ...(options.cwd === undefined ? {} : { cwd: options.cwd }) });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 20_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const stdoutBytes = Buffer.concat(out);
      resolvePromise({
        code,
        signal,
        stdout: stdoutBytes.toString('utf8'),
        stdoutBytes,
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
    child.stdin.end(options.input ?? '');
  });
}

export interface ServeHandle {
  url: string;
  child: ChildProcess;
  stderr(): string;
  /** resolves with the exit code when the process ends */
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after a timeout; resolves with the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Starts the compiled CLI with `args` (a command that serves HTTP: `serve`, `daemon`, `mount`, ...) and
 * resolves once it prints `listening on URL` on stderr; rejects if it exits first or stays silent for
 * `timeoutMs` (then it is killed). Used by every test that needs a real server process.
 */
export function startListening(
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 20_000,
  cwd?: string,
): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  const child = spawn(process.execPath, [MAIN, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'], ...(cwd === undefined ? {} : { cwd }) });
  const what = `strata ${args[0] ?? ''}`;
  let stderr = '';
  return new Promise((resolvePromise, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      child.kill('SIGKILL');
      reject(new Error(`${what} did not report its URL within ${timeoutMs} ms; stderr:\n${stderr}`));
    }, timeoutMs);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      // The plain line, or with JSON logs (the default on a pipe) `strata serve`'s record of that msg.
      const match = /^listening on (https?:\/\/\S+)$|^\{.*"msg":"listening on (https?:\/\/[^"\s]+)"/m.exec(stderr);
      if (match && !settled) {
        settled = true;
        clearTimeout(timer);
        resolvePromise({ child, url: (match[1] ?? match[2])!, stderr: () => stderr });
      }
    });
    child.on('exit', (code) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(new Error(`${what} exited with ${code} (signal ${child.signalCode}) before listening; stderr:\n${stderr}`));
    });
  });
}

/** Starts `strata serve --listen 127.0.0.1:0 [extraArgs]` and reads the chosen URL from its stderr. */
export async function startServe(home: string, env: NodeJS.ProcessEnv, timeoutMs = 20_000, extraArgs: string[] = []): Promise<ServeHandle> {
  const { child, url, stderr } = await startListening(['serve', '--home', home, '--listen', '127.0.0.1:0', '--quiet', ...extraArgs], env, timeoutMs);
  const exited = new Promise<number | null>((res) => {
    if (child.exitCode !== null || child.signalCode !== null) res(child.exitCode);
    else child.on('exit', (code) => res(code));
  });
  const stop = async (): Promise<number | null> => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    const code = await exited;
    clearTimeout(killer);
    return code;
  };
  return { url, child, stderr, exited, stop };
}

/**
 * A fresh home, bootstrapped (`strata admin bootstrap`), served by `strata serve`: the environment
 * a CLI test then runs with (server URL and owner key set), and how to take it all down.
 */
export async function servedHome(prefix: string, serveEnv: NodeJS.ProcessEnv = {}): Promise<{ dir: { path: string; remove(): Promise<void> }; server: ServeHandle; env: NodeJS.ProcessEnv; apiKey: string; dispose(): Promise<void> }> {
  const dir = await tempDir(prefix);
  const home = join(dir.path, 'home');
  const base = baseEnv(join(dir.path, 'config'));
  const boot = await runCli(['admin', 'bootstrap', '--home', home, '--json'], base);
  if (boot.code !== 0) throw new Error(`strata admin bootstrap exited ${boot.code}: ${boot.stderr}`);
  const apiKey = parseJson<{ apiKey: string }>(boot).apiKey;
  const server = await startServe(home, { ...base, ...serveEnv });
  return {
    dir,
    server,
    apiKey,
    env: { ...base, STRATA_SERVER_URL: server.url, STRATA_API_KEY: apiKey },
    async dispose() {
      await server.stop();
      await dir.remove();
    },
  };
}

/** A port nothing listens on: bind an ephemeral port, then release it. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  const address = server.address();
  await new Promise<void>((res) => server.close(() => res()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

export async function tempDir(prefix: string): Promise<{ path: string; remove(): Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

export function parseJson<T>(result: RunResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(`stdout is not one JSON document (exit ${result.code}):\n${result.stdout}\nstderr:\n${result.stderr}`);
  }
}
