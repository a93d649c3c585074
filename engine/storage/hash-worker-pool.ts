// A small pool of worker threads that hash (and copy into the store's temp files) large inputs, so the
// event loop never spends more than a memcpy of 1 MiB on them. BLAKE3 runs at ~2.3 GB/s on one core
// here: hashing a 256 MB file on the main thread would stall every request for ~110 ms, plus the
// synchronous writes. The pool has min(2, cores) threads: this machine has 2 cores, and the disk
// (~500 MB/s sequential) saturates before two hashers do.
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { StrataError, storageFailure } from '../errors.js';
import type { ContentHash } from '../types.js';
import { HASH_WORKER_SOURCE } from './hash-worker-source.js';
import { HashSession } from './hash-worker-session.js';

/** Chunk size for every transfer to and read inside a worker: large enough that per-message overhead is noise. */
export const HASH_CHUNK_BYTES = 1 << 20;

interface WorkerFailure {
  message: string;
  code?: string;
  errno?: number;
  syscall?: string;
  path?: string;
  side: 'source' | 'store';
}

export interface WorkerReply {
  id: number;
  error?: WorkerFailure;
  progress?: number;
  hash?: string;
  size?: number;
  tooLarge?: boolean;
  buf?: ArrayBuffer;
}

interface Pending {
  resolve(reply: WorkerReply): void;
  reject(error: unknown): void;
  onProgress: ((bytes: number) => void) | undefined;
}

/** One worker thread and what it still owes us. */
export interface HashSlot {
  readonly worker: Worker;
  readonly pending: Map<number, Pending>;
  /** open streaming sessions pinned to this worker (their messages must stay in order on one thread) */
  sessions: number;
}

export type HashFileResult =
  | { kind: 'hashed'; hash: ContentHash; size: number }
  | { kind: 'tooLarge'; size: number };

export class HashWorkerPool {
  private readonly slots: HashSlot[] = [];
  private readonly blakeModulePath = createRequire(import.meta.url).resolve('@napi-rs/blake-hash');
  private nextId = 1;
  private closed = false;

  constructor(private readonly size: number = Math.min(2, availableParallelism())) {}

  /**
   * Hash `src` (or `span` of it) and, when `tmpPath` is given, copy it there and fsync. The worker
   * reads the file itself. A span that runs past the end of the file hashes what is there (the
   * caller compares sizes).
   */
  async hashFile(
    src: string,
    tmpPath: string | null,
    maxBytes: number | null,
    onProgress?: (bytes: number) => void,
    span?: { offset: number; length: number },
  ): Promise<HashFileResult> {
    const reply = await this.request(
      this.pick(),
      { op: 'file', src, tmpPath, maxBytes, progress: onProgress !== undefined, span: span ?? null },
      [],
      onProgress,
    );
    if (reply.tooLarge === true) return { kind: 'tooLarge', size: reply.size ?? 0 };
    return { kind: 'hashed', hash: `blake3:${reply.hash}`, size: reply.size ?? 0 };
  }

  /** Start streaming into a new temp file; the session is pinned to one worker. */
  async openSession(tmpPath: string): Promise<HashSession> {
    const slot = this.pick();
    const sid = this.nextId++;
    slot.sessions += 1;
    try {
      await this.request(slot, { op: 'begin', sid, tmpPath });
    } catch (error) {
      slot.sessions -= 1;
      throw error;
    }
    return new HashSession(this, slot, sid, HASH_CHUNK_BYTES, tmpPath);
  }

  /** Used by HashSession; every call gets exactly one reply from the worker. */
  request(
    slot: HashSlot,
    message: Record<string, unknown>,
    transfer: ArrayBuffer[] = [],
    onProgress?: (bytes: number) => void,
  ): Promise<WorkerReply> {
    if (this.closed) return Promise.reject(new StrataError('SHUTTING_DOWN'));
    const id = this.nextId++;
    return new Promise<WorkerReply>((resolve, reject) => {
      // Keep the process alive only while a worker owes us an answer: an idle pool must not stop exit.
      if (slot.pending.size === 0) slot.worker.ref();
      slot.pending.set(id, { resolve, reject, onProgress });
      try {
        slot.worker.postMessage({ ...message, id }, transfer);
      } catch (error) {
        slot.pending.delete(id);
        if (slot.pending.size === 0) slot.worker.unref();
        reject(error);
      }
    });
  }

  releaseSession(slot: HashSlot): void {
    slot.sessions -= 1;
  }

  async close(): Promise<void> {
    this.closed = true;
    const slots = this.slots.splice(0);
    await Promise.all(
      slots.map((slot) => {
        slot.worker.ref(); // keep the process alive until the thread is really gone
        return slot.worker.terminate();
      }),
    );
    for (const slot of slots) this.failAll(slot, new StrataError('SHUTTING_DOWN'));
  }

  private pick(): HashSlot {
    if (this.closed) throw new StrataError('SHUTTING_DOWN');
    let best: HashSlot | undefined;
    for (const slot of this.slots) {
      if (best === undefined || load(slot) < load(best)) best = slot;
    }
    // Threads start lazily (~30 ms each): a store that only sees small objects never starts one.
    if (best === undefined || (load(best) > 0 && this.slots.length < this.size)) return this.spawn();
    return best;
  }

  private spawn(): HashSlot {
    const worker = new Worker(HASH_WORKER_SOURCE, {
      eval: true,
      workerData: { blakeModulePath: this.blakeModulePath, chunkBytes: HASH_CHUNK_BYTES },
    });
    worker.unref();
    const slot: HashSlot = { worker, pending: new Map(), sessions: 0 };
    worker.on('message', (reply: WorkerReply) => this.onReply(slot, reply));
    worker.on('error', (error) => {
      this.forget(slot);
      this.failAll(slot, new StrataError('STORAGE_ERROR', { message: 'A hash worker failed', cause: error }));
    });
    worker.on('exit', (code) => {
      this.forget(slot);
      const error = this.closed
        ? new StrataError('SHUTTING_DOWN')
        : new StrataError('STORAGE_ERROR', { message: `A hash worker exited (code ${code})` });
      this.failAll(slot, error);
    });
    this.slots.push(slot);
    return slot;
  }

  private onReply(slot: HashSlot, reply: WorkerReply): void {
    const pending = slot.pending.get(reply.id);
    if (pending === undefined) return;
    if (reply.progress !== undefined) {
      pending.onProgress?.(reply.progress);
      return;
    }
    slot.pending.delete(reply.id);
    if (slot.pending.size === 0) slot.worker.unref();
    if (reply.error === undefined) pending.resolve(reply);
    else pending.reject(toError(reply.error));
  }

  private forget(slot: HashSlot): void {
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots.splice(index, 1);
  }

  private failAll(slot: HashSlot, error: unknown): void {
    for (const pending of slot.pending.values()) pending.reject(error);
    slot.pending.clear();
  }
}

function load(slot: HashSlot): number {
  return slot.pending.size + slot.sessions;
}

/**
 * A failure reading the caller's source keeps its errno shape (ENOENT, EACCES...), so a caller such as
 * the daemon can tell "the file vanished" from "the store is broken"; a failure writing our temp file
 * is the store's, STORAGE_ERROR.
 */
function toError(failure: WorkerFailure): Error {
  const errno = Object.assign(new Error(failure.message), {
    code: failure.code,
    errno: failure.errno,
    syscall: failure.syscall,
    path: failure.path,
  });
  if (failure.side === 'source') return errno;
  return storageFailure(`Writing to the content store failed: ${failure.message}`, { details: { code: failure.code, syscall: failure.syscall }, cause: errno });
}
