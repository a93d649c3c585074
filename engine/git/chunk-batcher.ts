// Collects many small writes (command lines, small blobs) into chunks of a fixed size, so a stream
// of 100,000 short lines reaches its consumer (a socket, a child's stdin) as a few large writes: each
// chunk handed on costs an await and a syscall or more downstream, a line costs only a memcpy here.
// Large pieces (half a chunk or more: content read from the store in 64 KiB–1 MiB reads) pass
// through without a copy.

export const DEFAULT_CHUNK_BYTES = 64 * 1024;

export class ChunkBatcher {
  private buffer: Buffer;
  private used = 0;
  private ready: Uint8Array[] = [];

  constructor(private readonly chunkBytes = DEFAULT_CHUNK_BYTES) {
    if (!Number.isSafeInteger(chunkBytes) || chunkBytes < 64) throw new TypeError('chunkBytes must be an integer ≥ 64');
    this.buffer = Buffer.allocUnsafe(chunkBytes);
  }

  /** Appends text as UTF-8. */
  text(s: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 code unit, so this bound means it fits without measuring.
    if (s.length * 3 <= this.buffer.length - this.used) {
      this.used += this.buffer.write(s, this.used, 'utf8');
      return;
    }
    this.bytes(Buffer.from(s, 'utf8'));
  }

  /** Appends bytes. A large piece is handed on as it is: the caller must not modify it afterwards. */
  bytes(data: Uint8Array): void {
    if (data.length >= this.chunkBytes >>> 1) {
      this.flush();
      this.ready.push(data);
      return;
    }
    let offset = 0;
    while (offset < data.length) {
      const n = Math.min(this.buffer.length - this.used, data.length - offset);
      this.buffer.set(n === data.length ? data : data.subarray(offset, offset + n), this.used);
      this.used += n;
      offset += n;
      if (this.used === this.buffer.length) this.flush();
    }
  }

  /** Ends the current chunk (even if not full) and queues it. */
  flush(): void {
    if (this.used === 0) return;
    this.ready.push(this.buffer.subarray(0, this.used));
    // A fresh buffer: the one just queued belongs to the consumer now and may still be in flight.
    this.buffer = Buffer.allocUnsafe(this.chunkBytes);
    this.used = 0;
  }

  /** True when finished chunks wait to be taken. */
  get hasReady(): boolean {
    return this.ready.length > 0;
  }

  /** The finished chunks, oldest first; the batcher forgets them. */
  take(): Uint8Array[] {
    const chunks = this.ready;
    this.ready = [];
    return chunks;
  }
}
