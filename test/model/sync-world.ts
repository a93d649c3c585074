// The world of the sync model (issue 38): one `strata serve` on loopback (test/sync-harness.ts) and
// two or three workstations, each its own home and daemon (test/model/workstation.ts), each with an
// API key of its own (so the server can refuse one). The world outlives a sequence: each sequence
// gets a project of its own (`newProject`: a server project, the first workstation links a
// directory with `strata init DIR --server`, the others `strata clone` it, the third as a mount when
// asked), and the previous one is taken out of every home and directory first. Setting up a world
// (bootstrap, homes, daemons) took 16–86 s of a 33–150 s sequence on a loaded machine.
//
// Faults are done to it here: the server stopped, restarted or killed, a daemon killed or stopped (a
// workstation offline), a workstation's key refused (revoked on the server, then a new one given
// with `strata init DIR --server` as a user would), the second workstation's disk full (its
// projects live on a small tmpfs a filler file fills). Each is remembered, so that the end of a
// sequence can undo them all before checking (`recover`).

import { mkdir, open, statfs, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parseJson, type RunResult, runCli } from '../cli-harness.js';
import { sh } from '../daemon-harness.js';
import { openSyncWorld, type SyncWorld } from '../sync-harness.js';
import type { ApiView } from './tree.js';
import { type CaptureMode, createWorkstation, type Workstation } from './workstation.js';

export interface Station {
  /** wsA, wsB, wsC: also its name in conflict copies */
  readonly name: string;
  readonly ws: Workstation;
  /** the server refuses this workstation's key now (refuseKey) */
  refused: boolean;
  /** where its projects live: a small filesystem of its own (tmpfs) for the one whose disk can fill */
  readonly disk: string | null;
  /** its disk is full now (fillDisk) */
  full: boolean;
}

export interface SyncModelWorld {
  readonly sync: SyncWorld;
  readonly stations: Station[];
  /** the server's head over its API (the current project's current versions) */
  readonly server: ApiView;
  readonly serverUp: boolean;
  /** sequences this world has served */
  readonly sequences: number;
  /** takes the previous project out of every home, then links a new one everywhere (all daemons running, in sync) */
  newProject(): Promise<void>;
  stopServer(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  startServer(): Promise<void>;
  /** the server revokes the workstation's key */
  refuseKey(station: Station): Promise<void>;
  /** a new key for the workstation, given to it with `strata init DIR --server URL --project ID` */
  restoreKey(station: Station): Promise<void>;
  /** fills the workstation's small filesystem to the last byte (a file beside the project) */
  fillDisk(station: Station): Promise<void>;
  freeDisk(station: Station): Promise<void>;
  /** undoes every fault: the server and every daemon up, keys given back, disks freed */
  recover(): Promise<void>;
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
/** The second workstation's small disk: big enough for a project of short files and its staging. */
const SMALL_DISK = '16m';

/**
 * What the first workstation's directory holds when it is linked (every other one clones it): with
 * an empty project most early operations found nothing to rename, delete or append to.
 */
export const INITIAL_FILES: Record<string, string> = { 'a/a': 'v1\n', 'a/b': 'v2\n', b: 'v3\n', 'c/a': 'v4\n' };

export async function openModelWorld(options: SyncWorldOptions): Promise<SyncModelWorld> {
  const sync = await openSyncWorld('strata-model-sync-');
  const stations: Station[] = [];
  const keyIds = new Map<Station, string>();
  let serverUp = true;
  let projectId = '';
  let sequences = 0;
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
    projectPath: (suffix) => `/v1/projects/${projectId}${suffix}`,
  };
  /** A key of the workstation's own (an admin of the organization: retention is set with it). */
  const giveKey = async (station: Station) => {
    const created = await sync.serverCli(['keys', 'create', '--purpose', `model ${station.name}`, '--role', 'admin', '--json']);
    if (created.code !== 0) throw new Error(`keys create: ${created.stderr}`);
    const { key, apiKey } = parseJson<{ key: { keyId: string }; apiKey: string }>(created);
    keyIds.set(station, key.keyId);
    station.ws.env['STRATA_API_KEY'] = apiKey;
  };
  const dirOf = (station: Station) => join(station.disk ?? station.ws.root, `project-${sequences}`);
  const world: SyncModelWorld = {
    sync,
    stations,
    server,
    get serverUp() {
      return serverUp;
    },
    get sequences() {
      return sequences;
    },
    async newProject() {
      await world.recover();
      // The daemons stop (daemon.json is theirs while they run), the last project leaves every home
      // and disk, the new one is bound in each home, and the daemons start on it.
      await Promise.all(stations.map((s) => s.ws.stop()));
      await Promise.all(stations.map((s) => s.ws.forget()));
      sequences += 1;
      const created = await sync.serverCli(['projects', 'create', `model-${sequences}`, '--json']);
      if (created.code !== 0) throw new Error(`projects create: ${created.stderr}`);
      projectId = parseJson<{ projectId: string }>(created).projectId;
      const [first, ...others] = stations;
      const root = dirOf(first!);
      for (const [path, data] of Object.entries(INITIAL_FILES)) {
        await mkdir(dirname(join(root, path)), { recursive: true });
        await writeFile(join(root, path), data);
      }
      await first!.ws.bind(root, ['init', root, '--server', sync.url, '--project', projectId]);
      await Promise.all(
        others.map((s) => s.ws.bind(dirOf(s), ['clone', sync.url, projectId, dirOf(s), ...(s.ws.mode === 'mount' ? ['--mount'] : [])])),
      );
      await Promise.all(stations.map((s) => s.ws.start()));
      // Every clone has the initial files before the sequence starts.
      await Promise.all(
        stations.map(async (station) => {
          const wait = await world.cli(station, ['sync', 'wait', '--timeout', '120'], 180_000);
          if (wait.code !== 0) throw new Error(`setup: sync wait on ${station.name} exited ${wait.code}: ${wait.stderr}`);
        }),
      );
    },
    async stopServer(signal) {
      await sync.stopServer(signal);
      serverUp = false;
    },
    async startServer() {
      await sync.startServer();
      serverUp = true;
    },
    async refuseKey(station) {
      const revoked = await sync.serverCli(['keys', 'revoke', keyIds.get(station)!]);
      if (revoked.code !== 0) throw new Error(`keys revoke: ${revoked.stderr}`);
      station.refused = true;
    },
    async restoreKey(station) {
      await giveKey(station);
      // The user's way back: the link again, with the new key (a running daemon resumes its sync).
      const linked = await world.cli(station, ['init', station.ws.dir, '--mode', station.ws.mode, '--server', sync.url, '--project', projectId]);
      if (linked.code !== 0) throw new Error(`init --server again on ${station.name}: exit ${linked.code}: ${linked.stderr}`);
      station.refused = false;
    },
    async fillDisk(station) {
      if (station.disk === null) return;
      // A file beside the project takes every free block; then single bytes until ENOSPC (tmpfs
      // counts pages, so what fallocate leaves is taken by hand).
      const { bavail, bsize } = await statfs(station.disk);
      if (bavail > 0) await sh('fallocate', ['-l', String(bavail * bsize), join(station.disk, 'filler')], { allowFail: true, timeoutMs: 10_000 });
      for (let i = 0; i < 64; i++) {
        try {
          const handle = await open(join(station.disk, `filler-${i}`), 'w');
          try {
            await handle.write(Buffer.alloc(4096, 1));
          } finally {
            await handle.close();
          }
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw error;
        }
      }
      station.full = true;
    },
    async freeDisk(station) {
      if (station.disk === null) return;
      await sh('sh', ['-c', `rm -f ${join(station.disk, 'filler')}*`], { timeoutMs: 10_000 });
      station.full = false;
    },
    async recover() {
      if (!serverUp) await world.startServer();
      for (const station of stations) if (station.full) await world.freeDisk(station);
      for (const station of stations) if (!station.ws.running && station.ws.projectId !== '') await station.ws.start();
      for (const station of stations) if (station.refused) await world.restoreKey(station);
    },
    cli: (station, args, timeoutMs = 90_000) => runCli(args, station.ws.env, { cwd: station.ws.root, timeoutMs }),
    async dispose() {
      // Each workstation's daemon (and mount) first, then its small disk; the world removes the temporary directory.
      for (const station of stations) await station.ws.dispose().catch(() => undefined);
      for (const station of stations) if (station.disk !== null) await sh('umount', ['-l', station.disk], { allowFail: true, timeoutMs: 10_000 }).catch(() => undefined);
      await sync.dispose();
    },
  };
  try {
    for (let i = 0; i < options.workstations; i++) {
      const name = NAMES[i]!;
      const mode: CaptureMode = options.mount && i === 2 ? 'mount' : 'watch';
      const root = join(sync.root, name);
      const ws = await createWorkstation({ root, mode, env: { STRATA_WORKSTATION: name }, bind: null });
      // The second workstation's projects live on a small filesystem of their own, which can fill up.
      let disk: string | null = null;
      if (i === 1) {
        disk = join(root, 'disk');
        await mkdir(disk, { recursive: true });
        await sh('mount', ['-t', 'tmpfs', '-o', `size=${SMALL_DISK}`, 'tmpfs', disk], { timeoutMs: 10_000 });
      }
      const station: Station = { name, ws, refused: false, disk, full: false };
      stations.push(station);
      await giveKey(station);
    }
  } catch (error) {
    await world.dispose();
    throw error;
  }
  return world;
}

/**
 * One world for many sequences: opened at the first, kept while they pass, thrown away after a
 * failure (what it left behind must not be blamed on the next sequence) and opened again.
 */
export class WorldKeeper {
  #world: SyncModelWorld | null = null;
  /** worlds opened, and the time spent opening them */
  opened = 0;
  openMs = 0;
  constructor(readonly options: SyncWorldOptions) {}

  async get(): Promise<SyncModelWorld> {
    if (this.#world === null) {
      const started = Date.now();
      this.#world = await openModelWorld(this.options);
      this.opened += 1;
      this.openMs += Date.now() - started;
    }
    return this.#world;
  }

  async discard(): Promise<void> {
    const world = this.#world;
    this.#world = null;
    await world?.dispose().catch(() => undefined);
  }
}
