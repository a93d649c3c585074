// The entries of a directory with their names as the project records them (engine/raw-names.ts): a
// name that is not UTF-8 gets its stray bytes as U+EF80-U+EFFF, and one that cannot be recorded comes
// with `name: null` and its raw bytes.
//
// Listed as strings first, as before names were bytes: listing with `encoding: 'buffer'` costs a
// Buffer per entry, measured ~1 µs a name (50,000 names: median 69 ms as strings, 135 ms as Buffers
// with encodeName, 2026-11-29 on this 2-core VM under load). A name Node decoded into U+FFFD (its
// bytes are not UTF-8) or one holding a reserved character marks the directory, which is then listed
// again as bytes for those names alone: only directories that have such names pay.

import type { Dirent } from 'node:fs';
import { opendir, readdir } from 'node:fs/promises';
import { encodeName } from '../../engine/raw-names.js';

export interface ListedName {
  /** the recorded name, or null when the project cannot record it */
  name: string | null;
  /** the name's bytes when it is not plain text (null for the usual name) */
  raw: Buffer | null;
  entry: Pick<Dirent, 'isDirectory' | 'isFile' | 'isSymbolicLink'>;
}

/** U+FFFD (what Node makes of stray bytes) or a character reserved for them. */
const SUSPECT = /[\ufffd\uef80-\uefff]/;

/** Opens the directory (an error here is the caller's to judge: gone, not a directory) and lists it. */
export async function listNames(path: string | Buffer): Promise<AsyncIterable<ListedName>> {
  const handle = await opendir(path, { bufferSize: 256 });
  return names(path, handle);
}

async function* names(path: string | Buffer, handle: AsyncIterable<Dirent>): AsyncGenerator<ListedName> {
  let suspect = false;
  for await (const entry of handle) {
    if (SUSPECT.test(entry.name)) suspect = true;
    else yield { name: entry.name, raw: null, entry };
  }
  if (!suspect) return;
  let raw: Dirent<Buffer>[];
  try {
    raw = await readdir(path, { encoding: 'buffer', withFileTypes: true });
  } catch (error) {
    // Gone meanwhile: what it held is gone too (its parent's event says so).
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return;
    throw error;
  }
  for (const entry of raw) {
    const bytes = entry.name;
    // The names the first pass set aside, and no other.
    if (!SUSPECT.test(bytes.toString('utf8'))) continue;
    yield { name: encodeName(bytes), raw: bytes, entry };
  }
}
