// Streaming both ways: `put` sends a file or stdin as the request body without reading it into memory
// (multi-GB datasets are the normal case), and `cat` pipes the response body to stdout.

import { createReadStream } from 'node:fs';
import { lstat, readlink } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CliError, EXIT } from './errors.js';
import { createProgress } from './progress.js';

/** Files above this get a progress bar (when stderr is a terminal). */
export const PROGRESS_THRESHOLD = 8 * 1024 * 1024;

export interface UploadSource {
  body: Readable;
  /** known for files, unknown for stdin */
  size: number | undefined;
  /** the local file's exec bit (or --executable) */
  executable: boolean;
  /** a symbolic link: the body is its target (a local link, never followed; or --symlink) */
  symlink: boolean;
  /** closes the progress line */
  finish(): void;
}

/**
 * Opens LOCALFILE ('-' = stdin) as a stream; a missing file is LOCAL_FILE_NOT_FOUND (exit 3). A local
 * symbolic link is sent as a link (its target, never what it points to), as watch mode records it.
 */
export async function openUploadSource(localFile: string, label: string, executable: boolean, symlink = false): Promise<UploadSource> {
  if (localFile === '-') {
    const progress = createProgress(label, undefined, false);
    return { body: counted(process.stdin, 'stdin', progress.add), size: undefined, executable: executable && !symlink, symlink, finish: progress.done };
  }
  let size: number;
  let mode: number;
  try {
    const info = await lstat(localFile);
    if (info.isSymbolicLink()) {
      const target = await readlink(localFile, { encoding: 'buffer' });
      return { body: Readable.from([target]), size: target.length, executable: false, symlink: true, finish: () => {} };
    }
    if (symlink) {
      throw new CliError('USAGE', `${localFile} is not a symbolic link; --symlink takes the target from stdin (-) or from a link`, {
        exitCode: EXIT.usage,
        details: { field: 'localFile' },
      });
    }
    if (!info.isFile()) {
      throw new CliError('USAGE', `${localFile} is not a regular file`, { exitCode: EXIT.usage, details: { field: 'localFile' } });
    }
    size = info.size;
    mode = info.mode;
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw localError(error, localFile);
  }
  const progress = createProgress(label, size, size > PROGRESS_THRESHOLD);
  // 1 MiB reads: fewer round trips through the event loop than the 64 KiB default.
  const stream = createReadStream(localFile, { highWaterMark: 1024 * 1024 });
  return {
    body: counted(stream, localFile, progress.add),
    size,
    // Like git: a script that is executable locally stays executable when restored.
    executable: executable || (mode & 0o111) !== 0,
    symlink: false,
    finish: progress.done,
  };
}

/**
 * The source's bytes, counted for the progress line, with a read error turned into a CliError so the
 * failed upload reports the local cause. Pulled by the request: backpressure from the socket reaches
 * the disk read.
 */
function counted(source: Readable, name: string, onBytes: (n: number) => void): Readable {
  return Readable.from(
    (async function* () {
      try {
        for await (const chunk of source) {
          onBytes((chunk as Buffer).byteLength);
          yield chunk as Buffer;
        }
      } catch (error) {
        throw localError(error, name);
      }
    })(),
    { objectMode: false },
  );
}

function localError(error: unknown, name: string): CliError {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') {
    return new CliError('LOCAL_FILE_NOT_FOUND', `no such file: ${name}`, { exitCode: EXIT.notFound, cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new CliError('LOCAL_IO_ERROR', `cannot read ${name}: ${message}`, { exitCode: EXIT.unexpected, cause: error });
}

/** Pipes a response body to stdout. A reader that goes away (`| head`) ends the command quietly. */
export async function pipeToStdout(body: Readable): Promise<void> {
  try {
    await pipeline(body, process.stdout, { end: false });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EPIPE') return;
    throw error;
  }
}

/** Reads a whole response body (for `cat --json`, which must print one JSON document). */
export async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
