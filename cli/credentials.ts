// Tokens of `strata login`, per server, in `$XDG_CONFIG_HOME/strata/credentials.json` (beside
// config.json), mode 0600 from the moment the file exists: written to a 0600 temporary file and
// renamed over the old one, so a reader never sees a half-written file and no other user can read it.

import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { configPath } from './config.js';
import { CliError, EXIT } from './errors.js';

/** Refresh this long before expiry, so a request never leaves with a token about to die. */
export const REFRESH_MARGIN_MS = 60_000;

export interface StoredLogin {
  issuer: string;
  clientId: string;
  audience: string;
  scopes: string[];
  accessToken: string;
  refreshToken: string | null;
  /** epoch ms; the token is refreshed a minute before */
  expiresAt: number;
  /** who signed in, for `strata whoami` without a request and for messages */
  name: string | null;
}

interface CredentialsFile {
  servers: Record<string, StoredLogin>;
}

export function credentialsPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(dirname(configPath(env)), 'credentials.json');
}

function readAll(path: string): CredentialsFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { servers: {} };
    throw new CliError('CONFIG_INVALID', `cannot read ${path}: ${(error as Error).message}`, { exitCode: EXIT.usage, cause: error });
  }
  try {
    const parsed = JSON.parse(text) as CredentialsFile;
    if (parsed === null || typeof parsed !== 'object' || typeof parsed.servers !== 'object' || parsed.servers === null) throw new Error('no servers');
    return parsed;
  } catch (error) {
    throw new CliError('CONFIG_INVALID', `${path} is damaged: remove it and run \`strata login\` again`, { exitCode: EXIT.usage, cause: error });
  }
}

function writeAll(path: string, file: CredentialsFile): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    writeFileSync(temporary, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    chmodSync(temporary, 0o600); // whatever the umask
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}

export function loadLogin(serverUrl: string, env: NodeJS.ProcessEnv = process.env): StoredLogin | null {
  return readAll(credentialsPath(env)).servers[serverUrl] ?? null;
}

export function saveLogin(serverUrl: string, login: StoredLogin, env: NodeJS.ProcessEnv = process.env): string {
  const path = credentialsPath(env);
  const file = readAll(path);
  file.servers[serverUrl] = login;
  writeAll(path, file);
  return path;
}

/** Forgets the login of one server; returns what was stored, or null. */
export function removeLogin(serverUrl: string, env: NodeJS.ProcessEnv = process.env): StoredLogin | null {
  const path = credentialsPath(env);
  const file = readAll(path);
  const login = file.servers[serverUrl] ?? null;
  if (login === null) return null;
  delete file.servers[serverUrl];
  writeAll(path, file);
  return login;
}

/**
 * A long-lived source of a signed-in person's bearer token (the daemon's sync): every call reads the
 * stored login, refreshes it when it expires within a minute (one refresh at a time), and saves what
 * it got. A refresh that fails is retried from the file once: another process (the CLI, another
 * daemon) may have refreshed the same login meanwhile and rotated its refresh token.
 */
export function liveTokenSource(serverUrl: string, env: NodeJS.ProcessEnv = process.env): () => Promise<string> {
  let refreshing: Promise<string> | null = null;
  const fresh = (login: StoredLogin | null, margin: number) => login !== null && login.expiresAt - Date.now() > margin;
  return async () => {
    const login = loadLogin(serverUrl, env);
    if (login === null) throw new CliError('NO_CREDENTIALS', `not signed in to ${serverUrl}: run \`strata login\``, { exitCode: EXIT.auth });
    if (fresh(login, REFRESH_MARGIN_MS)) return login.accessToken;
    refreshing ??= (async () => {
      try {
        // openid-client is loaded only to refresh: most commands find a fresh token.
        const { refreshLogin } = await import('./login-flow.js');
        const refreshed = await refreshLogin(login);
        if (refreshed !== null) {
          saveLogin(serverUrl, refreshed, env);
          return refreshed.accessToken;
        }
        const again = loadLogin(serverUrl, env);
        if (again !== null && fresh(again, 0)) return again.accessToken;
        throw new CliError('SIGN_IN_EXPIRED', `your sign-in to ${serverUrl} expired: run \`strata login\` again`, { exitCode: EXIT.auth });
      } finally {
        refreshing = null;
      }
    })();
    return refreshing;
  };
}

/** The bearer token of a stored login for one command: read (and refreshed) once, then reused. */
export function tokenSourceFor(serverUrl: string, env: NodeJS.ProcessEnv = process.env): () => Promise<string> {
  const live = liveTokenSource(serverUrl, env);
  let current: Promise<string> | null = null;
  return () => {
    current ??= live();
    return current;
  };
}
