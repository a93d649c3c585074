// Strata under test: the engine in this process, or `strata serve` in a child process over HTTP.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createIdGenerator } from '../../engine/ids.js';
import { type LocalEngine, openLocalEngine } from '../../engine/local.js';
import { systemClock } from '../../engine/ports/world.js';
import type { Actor } from '../../engine/types.js';
import { CLI_MAIN, nodeEnv, nodeFlags } from './env.js';
import { HttpClient } from './http.js';
import { currentRss, peakRss } from './proc.js';

export const BENCH_ACTOR: Actor = { id: 'bench', kind: 'local', name: 'bench' };

export interface BenchEngine {
  local: LocalEngine;
  projectId: string;
}

/**
 * Opens a home in this process with one project (in `orgId`, else in a new organization). With
 * `options.env`, on the storage its STRATA_DATABASE_URL / STRATA_OBJECTS_URL name, as `strata serve`
 * opens it (server/server-storage.ts); without, the home's SQLite and object directory.
 */
export async function openBenchEngine(home: string, orgId?: string, options: { env?: NodeJS.ProcessEnv } = {}): Promise<BenchEngine> {
  let local: LocalEngine;
  if (options.env === undefined) {
    local = await openLocalEngine({ home });
  } else {
    const { openServerEngine } = await import('../../server/server-storage.js');
    local = await openServerEngine(home, options.env);
  }
  let org = orgId;
  if (org === undefined) {
    org = createIdGenerator(systemClock).uuid();
    await local.repository.access.createOrganization({ orgId: org, name: 'bench', createdAt: new Date().toISOString() });
  }
  const project = await local.engine.createProject({ orgId: org, name: 'bench' });
  return { local, projectId: project.projectId };
}

/** First run of a home for the HTTP variant: the owner API key and organization. */
export async function bootstrapBenchHome(home: string): Promise<{ apiKey: string; orgId: string }> {
  // Imported lazily: the HTTP variant may be run where the server is not built yet, and the in-process
  // variants must not depend on it.
  const { bootstrapHome } = await import('../../server/bootstrap.js');
  const { apiKey, orgId } = await bootstrapHome({ home });
  return { apiKey, orgId };
}

export interface ServerChild {
  url: string;
  pid: number;
  /** VmHWM of the server process so far (bytes) */
  peakRss(): number | null;
  /** VmRSS of the server process now (bytes) */
  rss(): number | null;
  close(): Promise<void>;
}

/**
 * `node dist/cli/main.js serve --home H --listen 127.0.0.1:0`; resolves once it prints its URL.
 * `options.env` is added to its environment (e.g. STRATA_DATABASE_URL, STRATA_OBJECTS_URL).
 */
export async function startServerChild(home: string, options: { env?: NodeJS.ProcessEnv } = {}): Promise<ServerChild> {
  if (!existsSync(CLI_MAIN)) throw new Error(`${CLI_MAIN} is missing: run \`npm run build\` first`);
  const child = spawn(process.execPath, [...nodeFlags('serve'), CLI_MAIN, 'serve', '--home', home, '--listen', '127.0.0.1:0', '--quiet'], {
    env: { ...nodeEnv(), ...options.env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let stderr = '';
    const timer = setTimeout(() => fail(new Error(`server did not start in 30 s: ${stderr}`)), 30_000);
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    };
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      stderr += chunk;
      // The plain line, or the msg of a JSON log record (the default on a pipe): the URL ends at a quote or the line's end.
      const match = /listening on (http:\/\/[^\s"]+)[\s"]/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.on('exit', (code, signal) => fail(new Error(`server exited (${signal ?? code}) before listening: ${stderr}`)));
  });
  const pid = child.pid!;
  return { url, pid, peakRss: () => peakRss(pid), rss: () => currentRss(pid), close: () => stopChild(child) };
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export interface HttpTarget {
  server: ServerChild;
  client: HttpClient;
  projectId: string;
  close(): Promise<void>;
}

/** A fresh home, bootstrapped, served by a child process, with one project created over HTTP. */
export async function startHttpTarget(home: string, maxSockets: number): Promise<HttpTarget> {
  const { apiKey } = await bootstrapBenchHome(home);
  const server = await startServerChild(home);
  const client = new HttpClient(server.url, apiKey, maxSockets);
  try {
    const project = await client.json<{ projectId: string }>('POST', '/v1/projects', { name: 'bench' });
    return {
      server,
      client,
      projectId: project.projectId,
      async close() {
        client.close();
        await server.close();
      },
    };
  } catch (error) {
    client.close();
    await server.close();
    throw error;
  }
}

/** Why the HTTP variant cannot run here, or null if it can (BENCH_SKIP_HTTP=1 skips it on purpose). */
export function httpUnavailable(): string | null {
  if (process.env['BENCH_SKIP_HTTP'] === '1') return 'skipped (BENCH_SKIP_HTTP=1)';
  if (!existsSync(CLI_MAIN)) return `${CLI_MAIN} is missing (npm run build)`;
  return null;
}
