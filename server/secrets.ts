// Secrets that live outside the database: the API key pepper (and, for the daemon, its local owner
// key). Files are 0600 in a 0700 directory and appear atomically: written to a temp file, fsynced,
// then hard-linked into place, which fails if another process got there first — both then use the
// winner's file, so two processes starting together never end up with different peppers.

import { randomBytes } from 'node:crypto';
import { chmod, link, mkdir, open, readFile, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { homeLayout } from '../engine/local.js';
import { StrataError } from '../engine/errors.js';

export const PEPPER_BYTES = 32;
const MIN_PEPPER_BYTES = 16;

export function pepperPath(home: string): string {
  return join(homeLayout(home).secrets, 'pepper');
}

async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Creates `path` with `content` (0600) unless it exists; returns what is in the file afterwards. */
export async function writeSecretFileOnce(path: string, content: Buffer): Promise<Buffer> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const temp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await open(temp, 'wx', 0o600);
  try {
    await handle.writeFile(content);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await link(temp, path);
    await syncDir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await unlink(temp);
  }
  return readFile(path);
}

/** STRATA_PEPPER: hex or base64/base64url, at least 16 bytes. The value never appears in errors. */
export function parsePepperValue(value: string): Buffer {
  const text = value.trim();
  const bytes = /^(?:[0-9a-fA-F]{2})+$/.test(text) ? Buffer.from(text, 'hex') : /^[A-Za-z0-9+/_-]+={0,2}$/.test(text) ? Buffer.from(text, 'base64') : null;
  if (bytes === null || bytes.length < MIN_PEPPER_BYTES) {
    throw new StrataError('INVALID_ARGUMENT', {
      message: `STRATA_PEPPER must be hex or base64 encoding at least ${MIN_PEPPER_BYTES} bytes`,
      details: { field: 'STRATA_PEPPER' },
    });
  }
  return bytes;
}

/**
 * The pepper: $STRATA_PEPPER if set, else the file $STRATA_PEPPER_FILE names, else `<home>/secrets/pepper`, created (32 random bytes) when
 * `create` is true and it does not exist yet.
 */
export async function loadPepper(home: string, options: { create: boolean; env?: NodeJS.ProcessEnv }): Promise<Buffer> {
  const env = options.env ?? process.env;
  const fromEnv = env['STRATA_PEPPER'];
  if (fromEnv !== undefined && fromEnv !== '') return parsePepperValue(fromEnv);
  // STRATA_PEPPER_FILE: a file holding the value (a container secret), for every command alike.
  const file = env['STRATA_PEPPER_FILE'];
  if (file !== undefined && file !== '') {
    let text: string;
    try {
      text = (await readFile(file, 'utf8')).trim();
    } catch (error) {
      throw new StrataError('INVALID_ARGUMENT', {
        message: `cannot read STRATA_PEPPER_FILE ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
        details: { field: 'STRATA_PEPPER_FILE' },
      });
    }
    return parsePepperValue(text);
  }
  const path = pepperPath(home);
  let pepper: Buffer;
  try {
    pepper = await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || !options.create) throw error;
    pepper = await writeSecretFileOnce(path, randomBytes(PEPPER_BYTES));
  }
  if (pepper.length < MIN_PEPPER_BYTES) {
    throw new StrataError('INVALID_ARGUMENT', { message: `The pepper file ${path} is shorter than ${MIN_PEPPER_BYTES} bytes`, details: { field: 'pepper' } });
  }
  return pepper;
}

/** The deployment environment: the option, else $STRATA_ENV, else `local`. */
export function resolveEnvironment(option?: string, env: NodeJS.ProcessEnv = process.env): string {
  const environment = option ?? env['STRATA_ENV'] ?? 'local';
  if (!/^[a-z0-9]{1,16}$/.test(environment)) {
    throw new StrataError('INVALID_ARGUMENT', { message: 'The environment must be 1-16 characters a-z, 0-9', details: { field: 'environment' } });
  }
  return environment;
}
