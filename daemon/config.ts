// `<home>/daemon.json`: which projects the daemon runs and where it listens. Written atomically
// (temp file, fsync, rename, fsync of the directory) so a crash never leaves half a file; read by the
// daemon at start and by the CLI for project discovery.

import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { StrataError } from '../engine/errors.js';
import type { ProjectMode } from './host.js';
import { parseSyncLink, type SyncLink } from './sync/link.js';

export const DEFAULT_DAEMON_LISTEN = '127.0.0.1:7421';
/** `strata watch --poll`: the interval without one, and the bounds of one given */
export const DEFAULT_POLL_MS = 5_000;
export const MIN_POLL_MS = 1_000;
export const MAX_POLL_MS = 3_600_000;

export interface DaemonProjectConfig {
  projectId: string;
  /** absolute real path */
  dir: string;
  mode: ProjectMode;
  /** linked to a server project (issue 14) */
  sync?: SyncLink;
  /**
   * Mount mode over a directory that held the project's files (`strata mount DIR --import`): they
   * were imported, the mount covers them, and every unmount writes the project's tree back there.
   */
  inPlace?: boolean;
  /** Mount mode: `strata unmount DIR` stopped it; the daemon leaves it alone until `strata mount DIR`. */
  unmounted?: boolean;
  /**
   * Watch mode: scan the directory every `pollMs` instead of waiting for inotify events (`strata watch
   * --poll`): for a directory other machines write to, on a network filesystem Strata does not
   * recognise as one (issue 38 item 13). Absent: events, or polling where the filesystem is known.
   */
  pollMs?: number;
}

export interface DaemonConfig {
  listen: string;
  projects: DaemonProjectConfig[];
}

export function daemonLayout(home: string) {
  return {
    config: join(home, 'daemon.json'),
    ownerKey: join(home, 'secrets', 'local-owner.key'),
    dir: join(home, 'daemon'),
    state: join(home, 'daemon', 'state.sqlite'),
    staging: join(home, 'daemon', 'staging'),
  };
}

function invalid(file: string, reason: string): StrataError {
  return new StrataError('INVALID_ARGUMENT', { message: `${file}: ${reason}`, details: { field: 'daemon.json', reason } });
}

/** The parsed daemon.json; the defaults when it does not exist. */
export function readDaemonConfig(home: string): DaemonConfig {
  const file = daemonLayout(home).config;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { listen: DEFAULT_DAEMON_LISTEN, projects: [] };
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalid(file, 'not valid JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw invalid(file, 'must hold a JSON object');
  const raw = parsed as Record<string, unknown>;
  const listen = raw['listen'] ?? DEFAULT_DAEMON_LISTEN;
  if (typeof listen !== 'string') throw invalid(file, 'listen must be a string');
  const projects = raw['projects'] ?? [];
  if (!Array.isArray(projects)) throw invalid(file, 'projects must be an array');
  return {
    listen,
    projects: projects.map((p: unknown, i) => {
      const item = (p ?? {}) as Record<string, unknown>;
      const { projectId, dir, mode } = item;
      if (typeof projectId !== 'string' || typeof dir !== 'string' || (mode !== 'watch' && mode !== 'mount')) {
        throw invalid(file, `projects[${i}] needs projectId, dir and mode (watch|mount)`);
      }
      const sync = parseSyncLink(item['sync']);
      return {
        projectId,
        dir,
        mode,
        ...(sync === undefined ? {} : { sync }),
        ...(mode === 'mount' && item['inPlace'] === true ? { inPlace: true } : {}),
        ...(mode === 'mount' && item['unmounted'] === true ? { unmounted: true } : {}),
        ...(mode === 'watch' && typeof item['pollMs'] === 'number' && item['pollMs'] >= MIN_POLL_MS ? { pollMs: item['pollMs'] } : {}),
      };
    }),
  };
}

/** `entry` polled every `pollMs` (null: back to events); INVALID_ARGUMENT for a mount project. */
export function withPolling(entry: DaemonProjectConfig, pollMs: number | null): DaemonProjectConfig {
  if (entry.mode !== 'watch') {
    throw new StrataError('INVALID_ARGUMENT', {
      message: `${entry.dir} is mounted, not watched: a mount sees every write made through it, and polling is for watched directories`,
      details: { field: 'poll', dir: entry.dir, mode: entry.mode },
    });
  }
  const { pollMs: _previous, ...rest } = entry;
  return pollMs === null ? rest : { ...rest, pollMs };
}

export async function writeDaemonConfig(home: string, config: DaemonConfig): Promise<void> {
  const file = daemonLayout(home).config;
  await mkdir(home, { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const handle = await open(temp, 'w', 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(config, null, 2)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  const dir = await open(home, 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

/** The project whose dir is `dir` or an ancestor of it (the innermost one). */
export function projectForDir(config: DaemonConfig, dir: string): DaemonProjectConfig | undefined {
  let best: DaemonProjectConfig | undefined;
  for (const project of config.projects) {
    if (dir === project.dir || dir.startsWith(`${project.dir}/`)) {
      if (best === undefined || project.dir.length > best.dir.length) best = project;
    }
  }
  return best;
}
