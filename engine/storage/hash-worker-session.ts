// One streaming ingest into a temp file, hashed and written by a hash worker. The main thread only
// copies incoming chunks into 1 MiB staging buffers and transfers them (zero-copy) to the worker,
// which sends each buffer back for reuse once written.
//
// Early writeback: the kernel starts writing dirty pages back only past dirty_background_ratio (10% of
// RAM: 2.4 GB here) or after 30 s, so without help every byte of an upload would reach the disk during
// the final fsync, after the last byte arrived: receive time plus write time. Every WRITEBACK_BYTES the
// session asks for an fdatasync on libuv's pool (a second descriptor; never awaited by the writer), so
// the disk writes while the network still delivers and the final fsync finds little left. Measured
// with 4 concurrent 256 MB uploads: 3.3-4.0 s before, see docs/benchmarks.md for after.
import { type FileHandle, open } from 'node:fs/promises';
import type { HashSlot, HashWorkerPool, WorkerReply } from './hash-worker-pool.js';

/**
 * Buffers handed to the worker and not yet written. Two keep the worker busy while the next one fills;
 * more would only buffer memory when the disk is slower than the source (back-pressure comes from
 * awaiting here, which stops pulling from the source). Memory per session: at most 3 x 1 MiB.
 */
const WRITE_WINDOW = 2;

/** Bytes handed to the worker between two background fdatasync calls. */
const WRITEBACK_BYTES = 32 << 20;

export class HashSession {
  private staging: Uint8Array | null = null;
  private fill = 0;
  private readonly inflight: Promise<void>[] = [];
  private readonly spare: ArrayBuffer[] = [];
  private failure: { error: unknown } | null = null;
  private finished = false;
  private dispatched = 0;
  private flushedAt = 0;
  private writeback: Promise<void> | null = null;

  constructor(
    private readonly pool: HashWorkerPool,
    private readonly slot: HashSlot,
    private readonly sid: number,
    private readonly chunkBytes: number,
    private readonly tmpPath: string,
  ) {}

  async write(chunk: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.failure !== null) throw this.failure.error;
      if (this.staging === null) {
        this.staging = new Uint8Array(this.spare.pop() ?? new ArrayBuffer(this.chunkBytes));
        this.fill = 0;
      }
      const n = Math.min(this.chunkBytes - this.fill, chunk.length - offset);
      this.staging.set(chunk.subarray(offset, offset + n), this.fill);
      this.fill += n;
      offset += n;
      if (this.fill === this.chunkBytes) await this.dispatch();
    }
  }

  /** Flush, fsync and close the temp file; returns the hex digest and the byte count. */
  async end(): Promise<{ hex: string; size: number }> {
    if (this.staging !== null && this.fill > 0) await this.dispatch();
    await this.drain();
    await this.writeback;
    if (this.failure !== null) throw this.failure.error;
    this.finish();
    const reply = await this.pool.request(this.slot, { op: 'end', sid: this.sid });
    return { hex: reply.hash ?? '', size: reply.size ?? 0 };
  }

  /** Close the temp file on the worker; the caller unlinks it. Never throws: it runs on failure paths. */
  async abort(): Promise<void> {
    if (this.finished) return;
    this.finish();
    await this.drain();
    await this.writeback;
    await this.pool.request(this.slot, { op: 'abort', sid: this.sid }).catch(() => {
      // The worker is gone (closed or crashed) and took the file descriptor with it: nothing to close.
    });
  }

  private async dispatch(): Promise<void> {
    const staging = this.staging;
    if (staging === null) return;
    const len = this.fill;
    this.staging = null;
    while (this.inflight.length >= WRITE_WINDOW) await this.inflight.shift();
    if (this.failure !== null) throw this.failure.error;
    const buffer = staging.buffer as ArrayBuffer;
    const sent = this.pool
      .request(this.slot, { op: 'write', sid: this.sid, buf: buffer, len }, [buffer])
      .then(
        (reply: WorkerReply) => {
          if (reply.buf !== undefined && this.spare.length < WRITE_WINDOW) this.spare.push(reply.buf);
        },
        (error: unknown) => {
          // Recorded, not thrown: the next write/end reports it (this promise is awaited only for pacing).
          this.failure ??= { error };
        },
      );
    this.inflight.push(sent);
    this.dispatched += len;
    if (this.writeback === null && this.dispatched - this.flushedAt >= WRITEBACK_BYTES) {
      this.flushedAt = this.dispatched;
      this.writeback = this.startWriteback().finally(() => {
        this.writeback = null;
      });
    }
  }

  /**
   * One fdatasync of what the worker wrote so far. Failures are ignored on purpose: this only starts
   * the disk early; the worker's fsync at end() is what makes the object durable, and reports errors.
   */
  private async startWriteback(): Promise<void> {
    let handle: FileHandle | null = null;
    try {
      handle = await open(this.tmpPath, 'r');
      await handle.datasync();
    } catch {
      // see above
    } finally {
      await handle?.close().catch(() => {});
    }
  }

  private async drain(): Promise<void> {
    while (this.inflight.length > 0) await this.inflight.shift();
  }

  private finish(): void {
    if (!this.finished) {
      this.finished = true;
      this.pool.releaseSession(this.slot);
    }
  }
}
