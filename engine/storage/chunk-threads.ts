// The chunking threads (chunk-file-worker-source.ts), process-wide: one per core. The work is
// CPU-bound, so more threads only share the same cores (4 × 256 MiB took the same time with 2 threads
// as with 4) while each costs ~15 MB of memory (an isolate, a read block and a maxSize buffer). They
// stay up between jobs (starting one and loading its modules costs ~30 ms) but are unref'd while idle,
// so an idle pool never holds the process open.
//
// A caller acquires a thread for a whole job (one file, or one streaming session), so a session's
// messages are handled in order by the thread that holds its state.
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { StrataError } from '../errors.js';
import { ASSEMBLE_WORKER_SOURCE } from './assemble-worker-source.js';
import { CHUNK_FILE_WORKER_SOURCE } from './chunk-file-worker-source.js';

const MAX_THREADS = Math.max(1, Math.min(2, availableParallelism()));

export interface ChunkReply {
  id: number;
  [key: string]: unknown;
}

export class ChunkThread {
  private readonly pending = new Map<number, { resolve(reply: ChunkReply): void; reject(error: unknown): void }>();
  private nextId = 1;
  private failure: unknown;
  private exited = false;

  constructor(private readonly worker: Worker) {
    worker.unref();
    worker.on('message', (reply: ChunkReply) => {
      const waiter = this.pending.get(reply.id);
      if (waiter === undefined) return;
      this.pending.delete(reply.id);
      if (this.pending.size === 0) worker.unref();
      waiter.resolve(reply);
    });
    worker.on('error', (error) => {
      this.failure = error;
    });
    // 'exit' comes after 'error': it alone fails what is pending, with the error as its cause.
    worker.on('exit', (code) => {
      this.exited = true;
      const error = new StrataError('INTERNAL', { message: `The chunk worker exited (code ${code})`, cause: this.failure });
      for (const waiter of this.pending.values()) waiter.reject(error);
      this.pending.clear();
    });
  }

  get alive(): boolean {
    return !this.exited;
  }

  /** One message, one reply (matched by id). The process stays up while a reply is owed. */
  request(message: Record<string, unknown>, transfer: ArrayBuffer[] = []): Promise<ChunkReply> {
    if (this.exited) return Promise.reject(new StrataError('INTERNAL', { message: 'The chunk worker has exited', cause: this.failure }));
    const id = this.nextId++;
    return new Promise<ChunkReply>((resolve, reject) => {
      if (this.pending.size === 0) this.worker.ref();
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ ...message, id }, transfer);
    });
  }
}

const idle: ChunkThread[] = [];
const waiting: Array<(thread: ChunkThread) => void> = [];
let threads = 0;

export function acquireChunkThread(): Promise<ChunkThread> {
  const ready = idle.pop();
  if (ready !== undefined) return Promise.resolve(ready);
  if (threads < MAX_THREADS) {
    threads += 1;
    const require = createRequire(import.meta.url);
    const worker = new Worker(CHUNK_FILE_WORKER_SOURCE + ASSEMBLE_WORKER_SOURCE, {
      eval: true,
      workerData: { blakeModulePath: require.resolve('@napi-rs/blake-hash'), sqliteModulePath: require.resolve('better-sqlite3') },
    });
    return Promise.resolve(new ChunkThread(worker));
  }
  return new Promise((resolve) => waiting.push(resolve));
}

/** Back to the pool; a thread that died is dropped and the next waiter gets a fresh one. */
export function releaseChunkThread(thread: ChunkThread): void {
  if (!thread.alive) {
    threads -= 1;
    const next = waiting.shift();
    if (next !== undefined) void acquireChunkThread().then(next);
    return;
  }
  const next = waiting.shift();
  if (next !== undefined) next(thread);
  else idle.push(thread);
}
