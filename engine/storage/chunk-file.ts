// Chunk and hash a file off the event loop: one worker thread per call reads the file in large blocks
// and returns the content-defined chunks (offset, size, BLAKE3) plus the whole file's BLAKE3 and size.
// Nothing holds the whole file in memory: the worker's block buffer is the only copy.
//
// A thread per call (~30 ms to start) rather than a pool: this is for datasets, files of tens of MB and
// more, where the chunking itself takes far longer than the start-up.
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { type ChunkerParams, chunkerParams, DEFAULT_CHUNKER_PARAMS } from '../datasets/chunker-params.js';
import { type ChunkerImplementation, jsChunkerModuleUrl, loadNativeChunker, nativeChunkerPath } from '../datasets/gear-chunker.js';
import { StrataError } from '../errors.js';
import type { ContentHash } from '../types.js';
import { CHUNK_FILE_WORKER_SOURCE } from './chunk-file-worker-source.js';

/**
 * Read size inside the worker. bench/chunk-throughput.ts, 1 GiB file in page cache, quiet machine:
 * 1 MiB blocks 1.09 GB/s, 4 MiB 1.03 GB/s (1.08 vs 1.09 GB per CPU-second): the same within noise,
 * so the smaller buffer.
 */
export const CHUNK_FILE_BLOCK_BYTES = 1 << 20;

export interface FileChunk {
  /** byte offset of the chunk in the file */
  offset: number;
  size: number;
  hash: ContentHash;
  /** with `stage`: where this chunk's bytes were appended in the pack file */
  packOffset?: number;
}

export interface ChunkFileResult {
  params: ChunkerParams;
  chunks: FileChunk[];
  /** BLAKE3 of the whole file */
  hash: ContentHash;
  size: number;
  implementation: ChunkerImplementation;
  /** with `stage`: bytes written to the pack file (0: nothing new; the caller still removes it) */
  packBytes: number;
}

export interface ChunkFileOptions {
  /** force one implementation (tests, benchmarks); default: native when built */
  implementation?: ChunkerImplementation;
  blockBytes?: number;
  /**
   * Also append each new chunk of at least `minBytes` (no loose object under `objectsDir`, no row in the
   * object pack database `dbPath`) to the pack file `packPath`, from the buffer it was hashed from
   * (FileChunk.packOffset): storing a dataset then reads its file once and writes its new bytes once,
   * into one file. The caller owns the pack file (and fsyncs it before relying on it).
   */
  stage?: ChunkStaging;
}

export interface ChunkStaging {
  packPath: string;
  objectsDir: string;
  dbPath: string;
  minBytes: number;
}

interface WorkerFailure {
  message: string;
  code?: string;
  errno?: number;
  syscall?: string;
  path?: string;
}

interface WorkerReply {
  chunks?: FileChunk[];
  hash?: ContentHash;
  size?: number;
  packBytes?: number;
  error?: WorkerFailure;
}

/**
 * Chunk `path` with `params` (validated: TypeError on misuse). A failure reading the file keeps its
 * errno shape (ENOENT, EACCES...), as HashWorkerPool.hashFile does.
 */
export async function chunkFile(path: string, params: ChunkerParams = DEFAULT_CHUNKER_PARAMS, options: ChunkFileOptions = {}): Promise<ChunkFileResult> {
  if (typeof path !== 'string' || path === '') throw new TypeError('chunkFile needs a file path');
  const checked = chunkerParams(params);
  const blockBytes = options.blockBytes ?? CHUNK_FILE_BLOCK_BYTES;
  if (!Number.isSafeInteger(blockBytes) || blockBytes < 4096 || blockBytes > 1 << 30) {
    throw new TypeError(`blockBytes must be an integer from 4096 to 2^30 (got ${blockBytes})`);
  }
  const addonPath = options.implementation === 'js' ? null : nativeChunkerPath();
  if (addonPath === null && options.implementation === 'native') throw new TypeError('the native chunker is not built; run scripts/env.sh');
  // Loaded here first so a stale or broken binary fails with a clear message before any thread starts.
  if (addonPath !== null) loadNativeChunker(addonPath);
  const reply = await runWorker({
    path,
    minSize: checked.minSize,
    avgSize: checked.avgSize,
    maxSize: checked.maxSize,
    addonPath,
    jsModuleUrl: jsChunkerModuleUrl(),
    blockBytes,
    stage: options.stage ?? null,
  });
  if (reply.error !== undefined) throw toError(reply.error);
  return {
    params: checked,
    chunks: reply.chunks ?? [],
    hash: reply.hash!,
    size: reply.size ?? 0,
    implementation: addonPath === null ? 'js' : 'native',
    packBytes: reply.packBytes ?? 0,
  };
}

/**
 * Chunking threads, process-wide: one per core. The work is CPU-bound, so more threads only share the
 * same cores (4 × 256 MiB took the same time with 2 threads as with 4) while each costs ~15 MB of
 * memory (an isolate, a read block and a maxSize buffer). They stay up between files (starting one
 * and loading its modules costs ~30 ms) but are unref'd, so an idle pool never holds the process.
 */
const MAX_THREADS = Math.max(1, Math.min(2, availableParallelism()));
const idle: Worker[] = [];
let threads = 0;
let nextJob = 1;
const waiting: Array<(worker: Worker) => void> = [];

async function runWorker(job: Record<string, unknown>): Promise<WorkerReply> {
  const worker = await acquire();
  const id = nextJob++;
  worker.ref();
  let reply: WorkerReply;
  try {
    reply = await new Promise<WorkerReply>((resolve, reject) => {
      const onMessage = (reply: WorkerReply & { id: number }) => {
        if (reply.id !== id) return;
        done();
        resolve(reply);
      };
      const onExit = (code: number) => {
        done();
        reject(new StrataError('INTERNAL', { message: `The chunk worker exited (code ${code}) without a result`, cause: failure }));
      };
      let failure: unknown;
      const onError = (error: unknown) => {
        failure = error;
      };
      const done = () => {
        worker.off('message', onMessage);
        worker.off('exit', onExit);
        worker.off('error', onError);
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
      // 'exit' comes after 'error': it alone rejects, with the error as its cause.
      worker.on('exit', onExit);
      worker.postMessage({ ...job, id });
    });
  } catch (error) {
    threads -= 1; // that thread is gone; the next caller starts a fresh one
    const next = waiting.shift();
    if (next !== undefined) void acquire().then(next);
    throw error;
  } finally {
    worker.unref();
  }
  release(worker);
  return reply;
}

function acquire(): Promise<Worker> {
  const ready = idle.pop();
  if (ready !== undefined) return Promise.resolve(ready);
  if (threads < MAX_THREADS) {
    threads += 1;
    const require = createRequire(import.meta.url);
    const worker = new Worker(CHUNK_FILE_WORKER_SOURCE, {
      eval: true,
      workerData: { blakeModulePath: require.resolve('@napi-rs/blake-hash'), sqliteModulePath: require.resolve('better-sqlite3') },
    });
    worker.unref();
    return Promise.resolve(worker);
  }
  return new Promise((resolve) => waiting.push(resolve));
}

function release(worker: Worker): void {
  const next = waiting.shift();
  if (next !== undefined) next(worker);
  else idle.push(worker);
}

function toError(failure: WorkerFailure): Error {
  if (failure.code !== undefined && failure.syscall !== undefined) {
    return Object.assign(new Error(failure.message), {
      code: failure.code,
      errno: failure.errno,
      syscall: failure.syscall,
      path: failure.path,
    });
  }
  return new StrataError('INTERNAL', { message: `Chunking failed: ${failure.message}`, details: { code: failure.code } });
}
