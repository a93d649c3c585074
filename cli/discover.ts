// Project discovery, the way git finds its repository: without --project / STRATA_PROJECT_ID, walk up
// from the working directory to a `.strata/project.json` (written by `strata init` in watch mode,
// shown by the mount in mount mode), else match the directory against daemon.json's project dirs.
// The project's home then says where its daemon listens and which key it accepts.

import { readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { daemonLayout, projectForDir, readDaemonConfig } from '../daemon/config.js';
import { daemonLockOwner } from '../daemon/lock.js';
import { resolveHome } from '../server/home.js';

export interface DiscoveredProject {
  projectId: string;
  home: string;
  /** the project root found */
  dir: string;
  /** the daemon of that home, when its daemon.json and owner key are readable */
  daemon: DaemonTarget | null;
}

function readJson(file: string): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export interface DaemonTarget {
  serverUrl: string;
  apiKey: string;
  /**
   * A live daemon holds the home's lock. When none does, whatever answers at serverUrl is not this
   * home's daemon (another home's, or anyone's listener): the owner key must not go there.
   */
  running: boolean;
}

/** The daemon URL and local owner key of a home; null when it has no daemon set up. */
export function daemonTarget(home: string): DaemonTarget | null {
  let apiKey: string;
  try {
    apiKey = readFileSync(daemonLayout(home).ownerKey, 'utf8').trim();
  } catch {
    return null;
  }
  let listen: string;
  try {
    listen = readDaemonConfig(home).listen;
  } catch {
    return null;
  }
  return { serverUrl: `http://${listen}`, apiKey, running: daemonLockOwner(daemonLayout(home).dir) !== null };
}

export function discoverProject(cwd: string = process.cwd(), env: NodeJS.ProcessEnv = process.env): DiscoveredProject | null {
  let start: string;
  try {
    start = realpathSync(cwd);
  } catch {
    return null;
  }
  for (let dir = start; ; dir = dirname(dir)) {
    const file = readJson(join(dir, '.strata', 'project.json'));
    if (file && typeof file['projectId'] === 'string' && typeof file['home'] === 'string') {
      return { projectId: file['projectId'], home: file['home'], dir, daemon: daemonTarget(file['home']) };
    }
    if (dir === dirname(dir)) break;
  }
  const home = resolveHome(undefined, env);
  try {
    const project = projectForDir(readDaemonConfig(home), start);
    if (project) return { projectId: project.projectId, home, dir: project.dir, daemon: daemonTarget(home) };
  } catch {
    // an unreadable daemon.json: no discovery, the usual "no project" error follows
  }
  return null;
}

/**
 * `--project ID` (or STRATA_PROJECT_ID) outside the project's directory: the project of that id in a
 * home of this machine — the home of the project around the working directory, else $STRATA_HOME
 * (the default home) — so its daemon answers as it does inside the directory. Null when none has it.
 */
export function projectById(projectId: string, cwd: string = process.cwd(), env: NodeJS.ProcessEnv = process.env): DiscoveredProject | null {
  const homes = new Set([discoverProject(cwd, env)?.home, resolveHome(undefined, env)]);
  for (const home of homes) {
    if (home === undefined) continue;
    try {
      const project = readDaemonConfig(home).projects.find((candidate) => candidate.projectId === projectId);
      if (project) return { projectId, home, dir: project.dir, daemon: daemonTarget(home) };
    } catch {
      // an unreadable daemon.json: not this home
    }
  }
  return null;
}
