// The real git binary for tests: no system or user config (HOME is a temp dir), a fixed identity, no
// background gc; run asynchronously with a timeout.
import { spawn } from 'node:child_process';

const GIT_OPTIONS = ['-c', 'user.name=x', '-c', 'user.email=y', '-c', 'init.defaultBranch=main', '-c', 'gc.auto=0'];

export function git(cwd: string, home: string, args: string[], input?: Uint8Array, timeoutMs = 30_000): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const env = { PATH: process.env['PATH'], HOME: home, GIT_CONFIG_NOSYSTEM: '1', TZ: 'UTC', LANG: 'C' };
    const child = spawn('git', [...GIT_OPTIONS, ...args], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(Buffer.concat(out));
      else reject(new Error(`git ${args.join(' ')} exited ${code ?? signal}: ${Buffer.concat(err).toString()}`));
    });
    child.stdin.on('error', () => {});
    child.stdin.end(input ?? Buffer.alloc(0));
  });
}
