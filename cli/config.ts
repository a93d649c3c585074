// Where the CLI talks to and as whom. Precedence: flag > environment > config file > default. The
// environment names are the ones every headless Strata client reads (docs/design.md §4).

import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { discoverProject, projectById } from './discover.js';
import { resolveHome } from '../server/home.js';
import { CliError, EXIT } from './errors.js';

export const DEFAULT_SERVER_URL = 'http://127.0.0.1:7420';

export interface GlobalFlags {
  server?: string;
  apiKey?: string;
  project?: string;
  json?: boolean;
}

export interface ConfigFile {
  serverUrl?: string;
  apiKey?: string;
  projectId?: string;
}

export type Source = 'flag' | 'env' | 'config' | 'default';

export interface ResolvedTarget {
  serverUrl: string;
  /** where serverUrl came from: fsck/gc run in-process when nobody configured a server */
  serverUrlSource: Source;
  apiKey: string | undefined;
  projectId: string | undefined;
  configPath: string;
  /** the directory of the project found from the working directory (path arguments are relative to it) */
  projectDir?: string;
  /** the project around the working directory belongs to a home whose daemon is not running */
  daemonDown?: { home: string; dir: string };
  /** exported variables the project directory took precedence over (the CLI notes it on stderr) */
  envOverridden?: string[];
  /** the project asked for is no project of this machine's home, and nothing names a server or key */
  notLocal?: { projectId: string; home: string };
}

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env['XDG_CONFIG_HOME'] || join(env['HOME'] || homedir(), '.config');
  return join(base, 'strata', 'config.json');
}

function readConfigFile(path: string): ConfigFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new CliError('CONFIG_INVALID', `cannot read ${path}: ${(error as Error).message}`, {
      exitCode: EXIT.usage,
      cause: error,
    });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new CliError('CONFIG_INVALID', `${path} is not valid JSON`, { exitCode: EXIT.usage, cause: error });
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new CliError('CONFIG_INVALID', `${path} must hold a JSON object`, { exitCode: EXIT.usage });
  }
  const result: ConfigFile = {};
  for (const field of ['serverUrl', 'apiKey', 'projectId'] as const) {
    const value = (parsed as Record<string, unknown>)[field];
    if (value === undefined) continue;
    if (typeof value !== 'string') {
      throw new CliError('CONFIG_INVALID', `${path}: ${field} must be a string`, {
        exitCode: EXIT.usage,
        details: { field },
      });
    }
    result[field] = value;
  }
  return result;
}

function pick(flag: string | undefined, env: string | undefined, file: string | undefined): [string, Source] | undefined {
  if (flag) return [flag, 'flag'];
  if (env) return [env, 'env'];
  if (file) return [file, 'config'];
  return undefined;
}

export function resolveTarget(flags: GlobalFlags, env: NodeJS.ProcessEnv = process.env): ResolvedTarget {
  const path = configPath(env);
  const file = readConfigFile(path);
  // Inside a project directory (`strata init`) the project and its daemon are found the way git finds
  // its repository (discover.ts), and the directory wins over STRATA_PROJECT_ID, STRATA_SERVER_URL and
  // STRATA_API_KEY exported for a team server (as the README's Configuration section describes): otherwise
  // `strata history` in the directory went to the other project, or sent the team key to the daemon.
  // Flags still choose explicitly. The daemon's key goes only to the daemon, the exported key never
  // to the daemon.
  const discovered = flags.project ? null : discoverProject(process.cwd(), env);
  // A project asked for by id (--project, STRATA_PROJECT_ID, "projectId") with no server and no key
  // configured: the daemon of the home that has it, as inside its directory — the team-server default
  // could only answer NO_CREDENTIALS. (Paths stay project paths as given: no directory was found.)
  const requested = discovered === null ? pick(flags.project, env['STRATA_PROJECT_ID'], file.projectId)?.[0] : undefined;
  const noServer = !flags.server && !env['STRATA_SERVER_URL'] && !file.serverUrl && !flags.apiKey && !env['STRATA_API_KEY'] && !file.apiKey;
  const byId = requested !== undefined && noServer ? projectById(requested, process.cwd(), env) : null;
  const found = discovered ?? byId;
  const local = flags.server ? undefined : (found?.daemon ?? undefined);
  const fromEnv = (name: string) => (discovered === null ? env[name] : undefined);
  // --server inside a project directory chooses that server: its key is the exported one (the
  // directory's daemon key never goes there), as the note on overridden variables tells the user.
  const envKey = flags.server ? env['STRATA_API_KEY'] : fromEnv('STRATA_API_KEY');
  const server = pick(flags.server, fromEnv('STRATA_SERVER_URL'), local?.serverUrl ?? file.serverUrl) ?? [DEFAULT_SERVER_URL, 'default'];
  const serverUrl = validateServerUrl(server[0]);
  const apiKey = pick(flags.apiKey, local === undefined ? envKey : undefined, local === undefined ? file.apiKey : local.running ? local.apiKey : undefined)?.[0];
  const overridden =
    discovered === null
      ? []
      : ['STRATA_PROJECT_ID', 'STRATA_SERVER_URL', ...(flags.server ? [] : ['STRATA_API_KEY'])].filter((name) => env[name] !== undefined && env[name] !== '');
  return {
    serverUrl,
    serverUrlSource: server[1],
    apiKey,
    projectId: pick(flags.project, fromEnv('STRATA_PROJECT_ID'), discovered?.projectId ?? file.projectId)?.[0],
    configPath: path,
    ...((local !== undefined && !local.running && apiKey === undefined) || (byId !== null && byId.daemon === null) ? { daemonDown: { home: found!.home, dir: found!.dir } } : {}),
    ...(discovered !== null ? { projectDir: discovered.dir } : {}),
    ...(overridden.length > 0 ? { envOverridden: overridden } : {}),
    ...(requested !== undefined && noServer && byId === null ? { notLocal: { projectId: requested, home: resolveHome(undefined, env) } } : {}),
  };
}

function validateServerUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CliError('USAGE', `server URL is not a URL: ${raw}`, { exitCode: EXIT.usage, details: { field: 'serverUrl' } });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new CliError('USAGE', `server URL must be http or https: ${raw}`, { exitCode: EXIT.usage, details: { field: 'serverUrl' } });
  }
  if (url.username || url.password) {
    // Credentials in a URL end up in logs and process listings; the API key has its own channel.
    throw new CliError('USAGE', 'server URL must not contain credentials; use STRATA_API_KEY', {
      exitCode: EXIT.usage,
      details: { field: 'serverUrl' },
    });
  }
  return url.href.replace(/\/+$/, '');
}
