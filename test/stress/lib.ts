// Shared by the fsx and fsstress tests on the mount and by bench/mount-stress.ts: the seeds
// (replayable from the environment), a seeded PRNG for the disturbances injected, the Python
// exercisers' paths and a small client for the control API.

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';

// From the sources (vitest) or from dist/test/stress (the compiled bench): the scripts stay in test/stress.
const STRESS_DIR = join(resolve(import.meta.dirname, import.meta.dirname.includes('/dist/') ? '../../..' : '../..'), 'test', 'stress');
export const FSX = join(STRESS_DIR, 'fsx.py');
export const FSSTRESS = join(STRESS_DIR, 'fsstress.py');

/**
 * `STRATA_STRESS_SEED=7` (or `7,8`) replays a failing seed; the defaults are seeds that pass, so the
 * suite stays green while a failing one is reported and fixed.
 */
export function stressSeeds(defaults: number[]): number[] {
  const given = process.env['STRATA_STRESS_SEED'];
  if (given === undefined || given.trim() === '') return defaults;
  return given.split(',').map((seed) => Number(seed.trim()));
}

/** mulberry32: small, seeded, good enough to pick disturbances and their pace reproducibly. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** The daemon's control API for one project. */
export interface Control {
  /** throws `METHOD path → status: body` on a non-2xx answer */
  api<T>(method: string, path: string, body?: unknown): Promise<T>;
  /** `/v1/projects/{id}` + suffix */
  project(suffix: string): string;
  /** the bytes of a version (a link's target for a link) */
  readVersion(versionId: string): Promise<Buffer>;
}

export function controlOf(url: string, apiKey: string, projectId: string): Control {
  const headers = { authorization: `Bearer ${apiKey}` };
  const project = (suffix: string) => `/v1/projects/${projectId}${suffix}`;
  return {
    project,
    async api<T>(method: string, path: string, body?: unknown): Promise<T> {
      const started = Date.now();
      const response = await fetch(`${url}${path}`, {
        method,
        headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        // Long enough to tell a stall from a slow answer (a request the mount never answers fails
        // with EIO after 120 s); the callers' own bounds stay the test timeouts.
        signal: AbortSignal.timeout(180_000),
      }).catch((error: Error) => {
        throw new Error(`${method} ${path}: ${error.name} after ${Date.now() - started} ms`, { cause: error });
      });
      const text = await response.text();
      if (!response.ok) throw new Error(`${method} ${path} → ${response.status}: ${text}`);
      return (text === '' ? undefined : JSON.parse(text)) as T;
    },
    async readVersion(versionId) {
      const response = await fetch(`${url}${project(`/fs/read?versionId=${versionId}`)}`, { headers, signal: AbortSignal.timeout(30_000) });
      if (!response.ok) throw new Error(`read ${versionId} → ${response.status}`);
      return Buffer.from(await response.arrayBuffer());
    },
  };
}

/** Runs `task` while holding an flock of `lockFile` (flock(1) holds it until its stdin closes). */
export async function holdingLock<T>(lockFile: string, task: () => Promise<T>): Promise<T> {
  const holder = spawn('flock', ['-x', '-w', '30', lockFile, 'sh', '-c', 'echo held; read _'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<number | null>((resolve) => holder.once('exit', resolve));
  try {
    await new Promise<void>((resolve, reject) => {
      holder.stdout.once('data', () => resolve());
      void exited.then((code) => reject(new Error(`flock ${lockFile} exited ${code} before holding it`)));
    });
    return await task();
  } finally {
    holder.stdin.end();
    await exited;
  }
}

/** Resolves on the next tick after `promise` settles: lets a loop poll whether a child has ended. */
export function settledFlag(promise: Promise<unknown>): () => boolean {
  let settled = false;
  void promise.finally(() => {
    settled = true;
  });
  return () => settled;
}

/** What a Python exerciser printed and how it ended. */
export interface PythonRun {
  code: number | null;
  stdout: string;
  stderr: string;
  seconds: number;
}

/** Runs python3 with `args` in `cwd`, killed (SIGKILL) after `timeoutMs`: a hang on the mount cannot wedge the caller. */
export function runPython(args: string[], cwd: string, timeoutMs: number): Promise<PythonRun> {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn('python3', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, seconds: (performance.now() - started) / 1000 });
    });
  });
}
