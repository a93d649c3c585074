// The staging worker threads (staging-worker-source.ts) and their request/reply plumbing. A staging
// file is pinned to one worker for its whole life, so its operations run in the order they were posted.
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { StrataError } from '../../engine/errors.js';
import { addonPath } from './fuse-binding.js';
import { STAGING_WORKER_SOURCE } from './staging-worker-source.js';

export interface StagingReply {
  id: number;
  error?: { message: string; code?: string; errno?: number; syscall?: string };
  buf?: ArrayBuffer;
  n?: number;
  size?: number;
  hash?: string;
  rehashed?: boolean;
}

interface Pending {
  resolve(reply: StagingReply): void;
  reject(error: unknown): void;
}

export interface StagingSlot {
  readonly worker: Worker;
  readonly pending: Map<number, Pending>;
  files: number;
}

/** A failure inside the worker, with the errno the kernel should see (ENOSPC stays ENOSPC). */
export function workerError(failure: NonNullable<StagingReply['error']>): NodeJS.ErrnoException {
  return Object.assign(new Error(failure.message), { code: failure.code, errno: failure.errno, syscall: failure.syscall });
}

/** native/fuse, for the worker's startWriteback; null where it is not built (the worker does without). */
function fuseModulePath(): string | null {
  try {
    return addonPath();
  } catch {
    return null;
  }
}

export class StagingPool {
  private readonly slots: StagingSlot[] = [];
  private readonly blakeModulePath = createRequire(import.meta.url).resolve('@napi-rs/blake-hash');
  private nextId = 1;
  private closed = false;

  /**
   * @param dir where staging files are created (same filesystem as the content store, so a finished
   *   file is renamed into the store instead of copied)
   * @param size worker threads; 1 keeps a core for the event loop that answers the kernel (2 cores here)
   */
  constructor(
    readonly dir: string,
    private readonly size = 1,
  ) {}

  /**
   * Starts the first worker now, not at the first large write after the mount came up, which used to
   * wait for it (a thread, its module, BLAKE3): a 2 MiB dd then took 70-90 ms instead of 20-30.
   */
  warm(): void {
    if (this.slots.length === 0 && !this.closed) this.spawn();
  }

  newPath(): string {
    return join(this.dir, `${process.pid}-${randomUUID()}.stg`);
  }

  nextSid(): number {
    return this.nextId++;
  }

  pick(): StagingSlot {
    if (this.closed) throw new StrataError('SHUTTING_DOWN');
    let best: StagingSlot | undefined;
    for (const slot of this.slots) if (best === undefined || slot.files < best.files) best = slot;
    if (best === undefined || (best.files > 0 && this.slots.length < this.size)) best = this.spawn();
    return best;
  }

  /** Posts a request; the reply (or the worker's error as an errno error) settles the promise. */
  request(slot: StagingSlot, message: Record<string, unknown>, transfer: ArrayBuffer[] = []): Promise<StagingReply> {
    if (this.closed) return Promise.reject(new StrataError('SHUTTING_DOWN'));
    const id = this.nextId++;
    return new Promise<StagingReply>((resolve, reject) => {
      if (slot.pending.size === 0) slot.worker.ref();
      slot.pending.set(id, { resolve, reject });
      try {
        slot.worker.postMessage({ ...message, id }, transfer);
      } catch (error) {
        slot.pending.delete(id);
        if (slot.pending.size === 0) slot.worker.unref();
        reject(error);
      }
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const slots = this.slots.splice(0);
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
    for (const slot of slots) {
      for (const pending of slot.pending.values()) pending.reject(new StrataError('SHUTTING_DOWN'));
      slot.pending.clear();
    }
  }

  private spawn(): StagingSlot {
    // STRATA_MOUNT_FILL_PAUSE_MS: a pause between the pieces of a background copy (staging-worker-source.ts
    // `fill`); how the tests crash the mount in the middle of one.
    const fillPauseMs = Number(process.env['STRATA_MOUNT_FILL_PAUSE_MS'] ?? 0) || 0;
    const worker = new Worker(STAGING_WORKER_SOURCE, { eval: true, workerData: { blakeModulePath: this.blakeModulePath, fuseModulePath: fuseModulePath(), fillPauseMs } });
    worker.unref();
    const slot: StagingSlot = { worker, pending: new Map(), files: 0 };
    worker.on('message', (reply: StagingReply) => {
      const pending = slot.pending.get(reply.id);
      if (pending === undefined) return;
      slot.pending.delete(reply.id);
      if (slot.pending.size === 0) worker.unref();
      // Replies that carry a buffer back resolve even on error: the caller recycles the buffer.
      if (reply.error === undefined || reply.buf !== undefined) pending.resolve(reply);
      else pending.reject(workerError(reply.error));
    });
    const failAll = (error: unknown) => {
      const index = this.slots.indexOf(slot);
      if (index >= 0) this.slots.splice(index, 1);
      for (const pending of slot.pending.values()) pending.reject(error);
      slot.pending.clear();
    };
    worker.on('error', (error) => failAll(new StrataError('STORAGE_ERROR', { message: 'A staging worker failed', cause: error })));
    worker.on('exit', (code) => failAll(this.closed ? new StrataError('SHUTTING_DOWN') : new StrataError('STORAGE_ERROR', { message: `A staging worker exited (code ${code})` })));
    this.slots.push(slot);
    return slot;
  }
}
