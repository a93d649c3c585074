// Starts bench/auth-overhead-server.js (the control API with a hosted identity and the two copies of
// one route) in a child process and reads the one JSON line it prints once it listens.

import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

export interface AuthBenchServer {
  child: ChildProcess;
  url: string;
  apiKey: string;
  orgId: string;
  projectId: string;
}

export async function startAuthBenchServer(issuer: string, audience: string, env: NodeJS.ProcessEnv = process.env): Promise<AuthBenchServer> {
  const script = join(import.meta.dirname, '..', 'auth-overhead-server.js');
  // BENCH_SERVER_NODE_FLAGS: e.g. `--cpu-prof --cpu-prof-dir=.prof` to profile the server side.
  const flags = (env['BENCH_SERVER_NODE_FLAGS'] ?? '').split(' ').filter((flag) => flag !== '');
  const child = spawn(process.execPath, [...flags, script, issuer, audience], { stdio: ['ignore', 'pipe', 'inherit'], env });
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    child.once('exit', (code) => reject(new Error(`bench server exited ${code}`)));
  });
  return { child, ...(JSON.parse(line) as Omit<AuthBenchServer, 'child'>) };
}
