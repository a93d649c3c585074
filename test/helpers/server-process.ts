import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';

export const REPO_ROOT = join(import.meta.dirname, '..', '..');
export const CLI_MAIN = join(REPO_ROOT, 'dist', 'cli', 'main.js');

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** graceful stop (SIGTERM), with a hard kill after `timeoutMs` */
  stop(timeoutMs?: number): Promise<void>;
  /** kill -9 */
  crash(): Promise<void>;
}

/** Runs `strata serve` from the compiled CLI on a free loopback port. */
export async function startServerProcess(home: string, env: NodeJS.ProcessEnv = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, [CLI_MAIN, 'serve', '--home', home, '--listen', '127.0.0.1:0'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in 20 s:\n${stderr}`)), 20_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      // The plain line, or the msg of a JSON log record (the default on a pipe): the URL ends at a quote or the line's end.
      const match = /listening on (http:\/\/[^\s"]+)[\s"]/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!.replace(/\/$/, ''));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${stderr}`));
    });
  });
  const exited = once(child, 'exit');
  return {
    url,
    child,
    async stop(timeoutMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      await exited;
      clearTimeout(timer);
    },
    async crash() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the compiled CLI as a child process (never synchronously), with a timeout. */
export async function runCli(args: string[], env: NodeJS.ProcessEnv = {}, input?: Buffer | string, timeoutMs = 30_000): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI_MAIN, ...args], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  child.stdin.end(input ?? '');
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  return { code: code ?? -1, stdout, stderr };
}
