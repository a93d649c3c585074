// Writes files of a project (a snapshot's tree, or one version) into a local directory for
// `strata checkout`. Bytes are streamed from the API to a temporary file next to the destination and
// renamed into place, so an interrupted checkout never leaves a short file under a real name, and a
// multi-GB file never sits in memory.
//
// Containment: every project path is checked again here (a server is not trusted to send only good
// paths), and nothing is written through a symbolic link: the links of the checkout are made last,
// after every file, and a link already in the directory (--force) on the way to a file is refused.

import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { lstat, mkdir, rename, rm, symlink } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { isStrataError } from '../engine/errors.js';
import { normalizeProjectPath } from '../engine/paths.js';
import { diskPath, showPath } from '../engine/raw-names.js';
import type { ApiClient } from './client.js';
import { CliError, EXIT } from './errors.js';

export interface CheckoutFile {
  path: string;
  versionId: string;
  size: number;
  executable: boolean;
  symlink: boolean;
}

export interface CheckoutWriter {
  /** writes one file (a link is kept for finish()) */
  write(file: CheckoutFile): Promise<void>;
  /** makes the links; returns the totals */
  finish(): Promise<{ files: number; links: number; bytes: number }>;
}

export interface CheckoutOptions {
  client: ApiClient;
  /** `/v1/projects/{id}` + suffix */
  projectPath: (suffix: string) => string;
  /** the destination directory, absolute, existing */
  root: string;
  /** replace what is already at a destination path (a file or a link; never a directory) */
  force: boolean;
  onBytes: (bytes: number) => void;
}

export function createCheckoutWriter(options: CheckoutOptions): CheckoutWriter {
  const { client, root } = options;
  const links: CheckoutFile[] = [];
  const checkedDirs = new Set<string>([root]);
  let files = 0;
  let bytes = 0;

  const read = (versionId: string) =>
    client.raw('GET', options.projectPath('/fs/read'), { query: { versionId }, headers: { accept: '*/*' } });

  /**
   * What the filesystem gets for a path below the checkout: the very bytes when its names are not
   * UTF-8 (recorded with U+EF80-U+EFFF, engine/raw-names.ts), else the string itself. Messages keep
   * the string form, shown with \xHH.
   */
  const onDisk = (abs: string): string | Buffer => (abs.startsWith(root + sep) ? diskPath(root, abs.slice(root.length + 1)) : abs);

  /** The local path of a project path, its parent directories made (none of them a link). */
  async function destination(path: string): Promise<string> {
    let normalized: string;
    try {
      normalized = normalizeProjectPath(path);
    } catch (error) {
      if (!isStrataError(error)) throw error;
      throw new CliError('BAD_RESPONSE', `the server sent a path that cannot be written: ${JSON.stringify(path)}`, { exitCode: EXIT.unexpected, cause: error });
    }
    const parts = normalized.split('/');
    let dir = root;
    for (const part of parts.slice(0, -1)) {
      dir = join(dir, part);
      if (checkedDirs.has(dir)) continue;
      const info = await lstat(onDisk(dir)).catch((error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? null : Promise.reject(localError(error, dir))));
      if (info === null) await mkdir(onDisk(dir)).catch((error: NodeJS.ErrnoException) => Promise.reject(localError(error, dir)));
      else if (info.isSymbolicLink()) throw new CliError('LOCAL_IO_ERROR', `${dir} is a symbolic link: checkout writes nothing through a link`, { exitCode: EXIT.conflict, details: { path: dir } });
      else if (!info.isDirectory()) throw new CliError('LOCAL_IO_ERROR', `${dir} is a file where the checkout needs a directory`, { exitCode: EXIT.conflict, details: { path: dir } });
      checkedDirs.add(dir);
    }
    const target = join(root, ...parts);
    if (!target.startsWith(root + sep)) throw new CliError('BAD_RESPONSE', `the server sent a path outside the checkout: ${JSON.stringify(path)}`, { exitCode: EXIT.unexpected });
    return target;
  }

  /** Refuses to replace a directory, or anything without --force; the rename replaces the rest. */
  async function checkReplace(target: string): Promise<void> {
    const info = await lstat(onDisk(target)).catch((error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? null : Promise.reject(localError(error, target))));
    if (info === null) return;
    if (info.isDirectory()) throw new CliError('LOCAL_IO_ERROR', `${target} is a directory where the checkout has a file`, { exitCode: EXIT.conflict, details: { path: target } });
    if (!options.force) throw new CliError('TARGET_NOT_EMPTY', `${target} exists (--force replaces it)`, { exitCode: EXIT.conflict, details: { path: target } });
  }

  const temporary = (target: string) => join(dirname(target), `.strata-checkout-${randomBytes(6).toString('hex')}`);

  return {
    async write(file) {
      if (file.symlink) {
        links.push(file);
        return;
      }
      const target = await destination(file.path);
      await checkReplace(target);
      const response = await read(file.versionId);
      const temp = temporary(target);
      let written = 0;
      const count = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          written += chunk.byteLength;
          options.onBytes(chunk.byteLength);
          done(null, chunk);
        },
      });
      try {
        // 0o777/0o666 less the umask, as git checks files out: the exec bit is the version's
        await pipeline(response.body, count, createWriteStream(onDisk(temp), { flags: 'wx', mode: file.executable ? 0o777 : 0o666 }));
        if (written !== file.size) {
          throw new CliError('BAD_RESPONSE', `${file.path}: the server sent ${written} bytes of ${file.size}`, { exitCode: EXIT.unexpected, details: { path: file.path } });
        }
        await rename(onDisk(temp), onDisk(target));
      } catch (error) {
        await rm(onDisk(temp), { force: true });
        throw error instanceof CliError ? error : localError(error as NodeJS.ErrnoException, target);
      }
      files += 1;
      bytes += written;
    },
    async finish() {
      for (const link of links) {
        const target = await destination(link.path);
        await checkReplace(target);
        const response = await read(link.versionId);
        const chunks: Buffer[] = [];
        for await (const chunk of response.body) chunks.push(chunk as Buffer); // a target: at most 4,095 bytes
        const temp = temporary(target);
        try {
          await symlink(Buffer.concat(chunks), onDisk(temp));
          await rename(onDisk(temp), onDisk(target));
        } catch (error) {
          await rm(onDisk(temp), { force: true });
          throw localError(error as NodeJS.ErrnoException, target);
        }
      }
      return { files, links: links.length, bytes };
    },
  };
}

function localError(error: NodeJS.ErrnoException, path: string): CliError {
  return new CliError('LOCAL_IO_ERROR', `${showPath(path)}: ${error.message}`, { exitCode: EXIT.unexpected, details: { path, cause: error.code }, cause: error });
}
