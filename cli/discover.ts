// Project discovery, the way git finds its repository: without --project / STRATA_PROJECT_ID, walk up
// from the working directory to a `.strata/project.json` (written by `strata init` in watch mode,
// shown by the mount in mount mode), else match the directory against daemon.json's project dirs.
// The project's home then says where its daemon listens and which key it accepts.

import { accessSync, constants, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { daemonLayout, projectForDir, readDaemonConfig } from '../daemon/config.js';
import { daemonLockOwner } from '../daemon/lock.js';
import { resolveHome } from '../server/home.js';
import { CliError, EXIT } from './errors.js';

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
  const running = daemonLockOwner(daemonLayout(home).dir) !== null && listenerIsLockOwners(listen, join(daemonLayout(home).dir, 'daemon.lock'));
  return { serverUrl: `http://${listen}`, apiKey, running };
}

/**
 * Whether what listens at `listen` belongs to the user whose daemon holds the lock. From the moment a
 * starting daemon takes the lock until it records the address it bound, daemon.json still names the
 * address of its last run, where anyone may listen meanwhile (another user of the machine): the owner
 * key went there. The kernel names each listening socket's owner in /proc/net/tcp{,6}; a listener of
 * another user is not the daemon (the CLI then says the daemon is not running). Where /proc does not
 * tell, nothing is refused.
 */
function listenerIsLockOwners(listen: string, lockFile: string): boolean {
  const port = Number(listen.slice(listen.lastIndexOf(':') + 1));
  let uid: number;
  try {
    uid = statSync(lockFile).uid;
  } catch {
    return true;
  }
  const owners: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid ...; st 0A is LISTEN
      const fields = line.trim().split(/\s+/);
      if (fields.length < 8 || fields[3] !== '0A') continue;
      const local = fields[1] ?? '';
      if (Number.parseInt(local.slice(local.lastIndexOf(':') + 1), 16) === port) owners.push(Number(fields[7]));
    }
  }
  return owners.every((owner) => owner === uid);
}

/**
 * A project directory shared on a workstation (a group directory) belongs to its owner's home. Another
 * user's commands there went on into that home and failed with EACCES as INTERNAL (`status`, `watch`,
 * `init`) or asked them to `strata login` (`history`): said plainly, with a code.
 */
function assertHomeReadable(home: string, dir: string): void {
  try {
    accessSync(home, constants.R_OK | constants.X_OK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EACCES') return;
    throw new CliError(
      'FORBIDDEN',
      `the project in ${dir} belongs to the Strata home ${home} (per ${join(dir, '.strata', 'project.json')}), which you cannot read: another user's daemon versions this directory, and its history is theirs`,
      { exitCode: EXIT.auth, details: { dir, home } },
    );
  }
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
      assertHomeReadable(file['home'], dir);
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
  let around: string | undefined;
  try {
    around = discoverProject(cwd, env)?.home;
  } catch {
    // the project around the working directory is another user's: look in our own home only
  }
  const homes = new Set([around, resolveHome(undefined, env)]);
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
