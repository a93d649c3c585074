// What links a local project to a server project (kept in daemon.json with the project), and the
// server credentials (kept apart, in `<home>/secrets/sync-credentials.json`, mode 0600: daemon.json
// is read by every CLI command; a key must not travel with it).
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { StrataError } from '../../engine/errors.js';
import { writeFileAtomic } from '../atomic-file.js';

export interface SyncLink {
  /** the server's base URL, e.g. https://strata.example.org */
  server: string;
  remoteProjectId: string;
  /** this workstation's name in conflict copies: `fit (conflict <workstation> …).m` */
  workstation: string;
}

const WORKSTATION_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** STRATA_WORKSTATION, else the host name (made safe for a file name). */
export function defaultWorkstation(): string {
  const wanted = process.env['STRATA_WORKSTATION'] ?? hostname().split('.')[0] ?? 'workstation';
  const safe = wanted.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 64);
  return WORKSTATION_RE.test(safe) ? safe : 'workstation';
}

/** A server URL as given, checked and without trailing slashes. */
export function normalizeServerUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new StrataError('INVALID_ARGUMENT', { message: `--server must be an http(s) URL, got '${raw}'`, details: { field: 'server' } });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new StrataError('INVALID_ARGUMENT', { message: `--server must be an http(s) URL, got '${raw}'`, details: { field: 'server' } });
  }
  if (url.username || url.password) {
    throw new StrataError('INVALID_ARGUMENT', { message: '--server must not carry credentials (use STRATA_API_KEY)', details: { field: 'server' } });
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

export function parseSyncLink(raw: unknown): SyncLink | undefined {
  if (raw === undefined || raw === null) return undefined;
  const item = raw as Record<string, unknown>;
  const { server, remoteProjectId, workstation } = item;
  if (typeof server !== 'string' || typeof remoteProjectId !== 'string' || typeof workstation !== 'string' || !WORKSTATION_RE.test(workstation)) {
    throw new StrataError('INVALID_ARGUMENT', { message: 'daemon.json: a project sync link needs server, remoteProjectId and workstation', details: { field: 'sync' } });
  }
  return { server, remoteProjectId, workstation };
}

const credentialsFile = (home: string) => join(home, 'secrets', 'sync-credentials.json');

/** The API key kept for a server, or null. */
export function readServerKey(home: string, server: string): string | null {
  try {
    const parsed = JSON.parse(readFileSync(credentialsFile(home), 'utf8')) as { servers?: Record<string, { apiKey?: unknown }> };
    const key = parsed.servers?.[server]?.apiKey;
    return typeof key === 'string' ? key : null;
  } catch {
    return null;
  }
}

/** Keeps `apiKey` for `server` (0600, written atomically). */
export async function saveServerKey(home: string, server: string, apiKey: string): Promise<void> {
  const file = credentialsFile(home);
  let servers: Record<string, { apiKey: string }> = {};
  try {
    servers = (JSON.parse(readFileSync(file, 'utf8')) as { servers?: Record<string, { apiKey: string }> }).servers ?? {};
  } catch {
    // none yet, or unreadable: start over (the key is being given again)
  }
  servers[server] = { apiKey };
  await mkdir(join(home, 'secrets'), { recursive: true, mode: 0o700 });
  await writeFileAtomic(file, `${JSON.stringify({ servers }, null, 2)}\n`, 0o600);
}
