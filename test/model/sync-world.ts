// The world of the sync model (issue 38): one `strata serve` on loopback (test/sync-harness.ts) and
// two or three workstations, each its own home, directory and daemon (test/model/workstation.ts):
// the first links a directory with `strata init DIR --server`, the others `strata clone` it, the
// third (when asked) as a mount. Faults are done to it here: the server stopped, restarted or
// killed, a daemon killed or stopped (a workstation offline), each remembered so that the end of a
// sequence can bring everything back before checking.

import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { type RunResult, runCli } from '../cli-harness.js';
import { openSyncWorld, type SyncWorld } from '../sync-harness.js';
import type { ApiView } from './tree.js';
import { type CaptureMode, createWorkstation, type Workstation } from './workstation.js';

export interface Station {
  /** wsA, wsB, wsC: also its name in conflict copies */
  readonly name: string;
  readonly ws: Workstation;
}

export interface SyncModelWorld {
  readonly sync: SyncWorld;
  readonly stations: Station[];
  /** the server's head over its API (the project's current versions) */
  readonly server: ApiView;
  readonly serverUp: boolean;
  stopServer(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  startServer(): Promise<void>;
  /** the CLI on a workstation, run outside its directory (a dead mount point cannot be a cwd) */
  cli(station: Station, args: string[], timeoutMs?: number): Promise<RunResult>;
  dispose(): Promise<void>;
}

export interface SyncWorldOptions {
  /** 2 or 3 */
  workstations: number;
  /** the third workstation is a mounted clone (`strata clone --mount`) */
  mount: boolean;
}

const NAMES = ['wsA', 'wsB', 'wsC'] as const;

/**
 * What the first workstation's directory holds when it is linked (every other one clones it): with
 * an empty project most early operations found nothing to rename, delete or append to.
 */
export const INITIAL_FILES: Record<string, string> = { 'a/a': 'v1\n', 'a/b': 'v2\n', b: 'v3\n', 'c/a': 'v4\n' };

export async function openModelWorld(options: SyncWorldOptions): Promise<SyncModelWorld> {
  const sync = await openSyncWorld('strata-model-sync-');
  const stations: Station[] = [];
  let serverUp = true;
  const server: ApiView = {
    async api<T>(method: string, path: string, body?: unknown): Promise<T> {
      const response = await fetch(`${sync.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${sync.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(60_000),
      });
      const text = await response.text();
      if (!response.ok) throw new Error(`server ${method} ${path} → ${response.status}: ${text}`);
      return (text === '' ? undefined : JSON.parse(text)) as T;
    },
    async bytes(path) {
      const response = await fetch(`${sync.url}${path}`, { headers: { authorization: `Bearer ${sync.apiKey}` }, signal: AbortSignal.timeout(60_000) });
      if (!response.ok) throw new Error(`server GET ${path} → ${response.status}: ${await response.text()}`);
      return Buffer.from(await response.arrayBuffer());
    },
    projectPath: (suffix) => `/v1/projects/${sync.projectId}${suffix}`,
  };
  const world: SyncModelWorld = {
    sync,
    stations,
    server,
    get serverUp() {
      return serverUp;
    },
    async stopServer(signal) {
      await sync.stopServer(signal);
      serverUp = false;
    },
    async startServer() {
      await sync.startServer();
      serverUp = true;
    },
    cli: (station, args, timeoutMs = 90_000) => runCli(args, station.ws.env, { cwd: station.ws.root, timeoutMs }),
    async dispose() {
      // Each workstation's daemon (and mount) first; the world removes the temporary directory.
      for (const station of stations) await station.ws.dispose().catch(() => undefined);
      await sync.dispose();
    },
  };
  const open = async (i: number): Promise<Station> => {
    const name = NAMES[i]!;
    const mode: CaptureMode = options.mount && i === 2 ? 'mount' : 'watch';
    const root = join(sync.root, name);
    if (i === 0) {
      for (const [path, data] of Object.entries(INITIAL_FILES)) {
        await mkdir(dirname(join(root, 'project', path)), { recursive: true });
        await writeFile(join(root, 'project', path), data);
      }
    }
    const ws = await createWorkstation({
      root,
      mode,
      env: { STRATA_WORKSTATION: name, STRATA_API_KEY: sync.apiKey },
      bind: (dir) => (i === 0 ? ['init', dir, '--server', sync.url, '--project', sync.projectId] : ['clone', sync.url, sync.projectId, dir, ...(mode === 'mount' ? ['--mount'] : [])]),
    });
    const station = { name, ws };
    stations.push(station);
    await ws.start();
    return station;
  };
  try {
    // The first links the directory with its files; the clones start together (setup was half of a
    // sequence's time on a loaded machine).
    await open(0);
    await Promise.all(Array.from({ length: options.workstations - 1 }, (_, i) => open(i + 1)));
    stations.sort((a, b) => a.name.localeCompare(b.name));
    // Every clone has the initial files before the sequence starts.
    await Promise.all(
      stations.map(async (station) => {
        const wait = await world.cli(station, ['sync', 'wait', '--timeout', '120'], 180_000);
        if (wait.code !== 0) throw new Error(`setup: sync wait on ${station.name} exited ${wait.code}: ${wait.stderr}`);
      }),
    );
  } catch (error) {
    await world.dispose();
    throw error;
  }
  return world;
}
