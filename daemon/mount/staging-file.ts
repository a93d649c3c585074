// One staging file: where a file's new content is written between its first write and its capture.
//
// Write-behind: a FUSE write is answered as soon as its bytes are copied into a 1 MiB chunk here;
// full chunks go to the staging worker (transferred, not copied) which writes and hashes them. So the
// event loop spends a memcpy per 128 KiB request, and the kernel's next request arrives while the
// worker writes the previous chunk. Reads, truncates and fsyncs are posted behind the pending writes
// (one worker, message order), so they observe every earlier write. A failure of a deferred write
// (ENOSPC, EIO) is reported by the next write, flush (close) or fsync of the file, like NFS does.
import { writeFileSync } from 'node:fs';
import { open, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { StrataError } from '../../engine/errors.js';
import type { ContentHash } from '../../engine/types.js';
import type { ContentSpan } from './content-reader.js';

/** Where a base's bytes lie for a fill; `release` removes a temporary copy once the worker opened it. */
export interface BaseSpans {
  spans: ContentSpan[];
  release?: () => Promise<void>;
}
import { type StagingPool, type StagingReply, type StagingSlot, workerError } from './staging-pool.js';

const CHUNK_BYTES = 1 << 20;
const MAX_JOURNALED_RANGES = 1000;
/** Unacknowledged bytes per file before a write waits: bounds memory when the disk is slower than the writer. */
const MAX_INFLIGHT_BYTES = 8 * CHUNK_BYTES;
const RESOLVED = Promise.resolve();
/** Chunks the worker gave back, kept for the next writes: a dd's 1 MiB requests allocate nothing. */
const SPARE_CHUNKS = 4;

export class StagingFile {
  private chunk: { offset: number; buf: Uint8Array; len: number } | null = null;
  private readonly spare: ArrayBuffer[] = [];
  private inflightBytes = 0;
  private waiters: Array<() => void> = [];
  private failure: Error | null = null;
  private done = false;
  private journaled: string | null = null;
  /** the record as last made durable (fsync'd with its directory): an fsync of the file that changes nothing in it skips both */
  private journaledDurably: string | null = null;

  private constructor(
    private readonly pool: StagingPool,
    private readonly slot: StagingSlot,
    private readonly sid: number,
    readonly path: string,
    /** the file's logical size as the kernel sees it */
    public size: number,
  ) {}

  /** A new empty staging file. The open is posted, not awaited: later requests queue behind it. */
  static create(pool: StagingPool): StagingFile {
    const slot = pool.pick();
    const file = new StagingFile(pool, slot, pool.nextSid(), pool.newPath(), 0);
    slot.files += 1;
    file.post({ op: 'open', path: file.path, existing: false });
    return file;
  }

  /** Takes over an existing file (moved into the staging directory), e.g. an ignored file renamed into the project. */
  static async adoptExisting(pool: StagingPool, path: string): Promise<StagingFile> {
    const slot = pool.pick();
    const file = new StagingFile(pool, slot, pool.nextSid(), path, 0);
    slot.files += 1;
    const reply = await pool.request(slot, { op: 'open', sid: file.sid, path, existing: true });
    file.size = reply.size ?? 0;
    return file;
  }

  /**
   * Copy-on-write without the wait: the new file takes the first `limit` bytes of the base content,
   * copied by the worker in the background (`reserve`, then `fill`); writes go on meanwhile, and the
   * first one is answered before the base's bytes are even found (`spans`: for a 1 GiB dataset, its
   * manifest and 837 shard locations, 6-9 ms). Reads, truncates, fsyncs and the capture wait for the
   * fill to start (`ready`). Until the copy is done, the journal record carries what a restart needs
   * to finish it (the base's hash, `limit`, the ranges written): recovery.ts. A fill that cannot
   * start is the file's failure, reported like a deferred write's; its journal record stays, so the
   * next start finishes the copy.
   */
  fillBehind(base: { hash: ContentHash; dataset: boolean }, limit: number, spans: () => Promise<BaseSpans>): void {
    this.flushChunk();
    this.post({ op: 'reserve', limit });
    this.size = limit;
    this.fill = { hash: base.hash, dataset: base.dataset, limit, written: [] };
    this.ready = this.startFill(spans).catch((error: unknown) => {
      this.broken ??= error instanceof Error ? error : new StrataError('STORAGE_ERROR', { message: String(error) });
      this.failure ??= this.broken;
    });
  }

  private async startFill(spans: () => Promise<BaseSpans>): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const found = await spans();
      try {
        await this.pool.request(this.slot, { op: 'fill', sid: this.sid, spans: found.spans });
        return;
      } catch (error) {
        // A pack file compacted away between the lookup and the open: look it up once more.
        if (attempt > 0 || (error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      } finally {
        // The worker holds the span files open now (or failed): a temporary copy can go.
        await found.release?.();
      }
    }
  }

  /** Resolves once a background fill has started (or failed to): what must not overtake it waits here. */
  private ready: Promise<void> = Promise.resolve();

  /** Waits until the file holds all its bytes (a background fill done): before others read it by path. */
  async complete(): Promise<void> {
    if (this.fill === null) return this.drain();
    this.flushChunk();
    await this.ready;
    await this.pool.request(this.slot, { op: 'complete', sid: this.sid });
    this.fill = null;
    await this.drain();
  }

  /** A background fill's state as the journal keeps it; null when none was started. */
  private fill: { hash: ContentHash; dataset: boolean; limit: number; written: Array<[number, number]> } | null = null;

  /** Copy-on-write: fill the new file with a stored object's bytes (hashed on the way). */
  async copyFrom(src: string): Promise<void> {
    this.flushChunk();
    const reply = await this.pool.request(this.slot, { op: 'copy', sid: this.sid, src });
    this.size = reply.size ?? 0;
  }

  async write(offset: number, data: Buffer, len: number): Promise<void> {
    const failure = this.takeFailure();
    if (failure !== null) throw failure;
    await this.put(offset, data, len);
  }

  /**
   * A deferred failure is reported once — to the next write, close (drain) or fsync — as a filesystem
   * reports a write-back error; the file then holds what was written before it and goes on as a file
   * (written again once there is room, read, versioned). Kept instead, it failed every later close,
   * a reader's too, and every capture of the file.
   */
  private takeFailure(): Error | null {
    const failure = this.failure;
    // The writes already posted (up to 8 MiB of them) fail alike on a full disk: this one report
    // covers them, or a reader's close would get the writer's ENOSPC later.
    if (failure !== null) this.reportedThrough = this.posted;
    // A file that never opened, or whose base was never copied in, is not what it claims to be: that
    // failure stays (the journal's record lets the next start finish the copy).
    this.failure = this.broken;
    return failure;
  }

  /** The failure of the file's open or of its fill's start: reported every time. */
  private broken: Error | null = null;
  /** writes posted to the worker, and how many of them a reported failure covered */
  private posted = 0;
  private reportedThrough = 0;

  /** No deferred failure to report first: `put` may take a write. */
  get writable(): boolean {
    return this.failure === null;
  }

  /**
   * Copies the bytes in now (they may be lent: fuse-lowlevel.ts); the promise resolves when there is
   * room for more (bounded memory when the disk is slower than the writer).
   */
  put(offset: number, data: Buffer, len: number): Promise<void> {
    if (this.fill !== null && offset < this.fill.limit) this.fill.written = addRange(this.fill.written, offset, Math.min(offset + len, this.fill.limit));
    const chunk = this.chunk;
    if (chunk !== null && offset === chunk.offset + chunk.len && chunk.len + len <= CHUNK_BYTES) {
      chunk.buf.set(data.subarray(0, len), chunk.len);
      chunk.len += len;
      if (chunk.len === CHUNK_BYTES) this.flushChunk();
    } else {
      this.flushChunk();
      const buf = new Uint8Array(this.spare.pop() ?? new ArrayBuffer(Math.max(CHUNK_BYTES, len)));
      if (buf.length < len) throw new RangeError('write larger than a chunk');
      buf.set(data.subarray(0, len), 0);
      this.chunk = { offset, buf, len };
      if (len === buf.length) this.flushChunk();
    }
    if (offset + len > this.size) this.size = offset + len;
    return this.inflightBytes > MAX_INFLIGHT_BYTES ? this.room() : RESOLVED;
  }

  private async room(): Promise<void> {
    while (this.inflightBytes > MAX_INFLIGHT_BYTES && this.failure === null) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  async read(offset: number, len: number, into: Buffer): Promise<number> {
    this.flushChunk();
    await this.ready;
    const reply = await this.pool.request(this.slot, { op: 'read', sid: this.sid, offset, len });
    if (reply.buf === undefined) return 0;
    const n = reply.n ?? 0;
    into.set(new Uint8Array(reply.buf, 0, n), 0);
    return n;
  }

  async truncate(size: number): Promise<void> {
    this.flushChunk();
    await this.ready;
    await this.pool.request(this.slot, { op: 'truncate', sid: this.sid, size });
    this.size = size;
    const fill = this.fill;
    if (fill !== null && size < fill.limit) {
      fill.limit = size;
      fill.written = fill.written.filter(([a]) => a < size).map(([a, b]) => [a, Math.min(b, size)]);
    }
  }

  /** Waits for every write so far; reports a deferred failure. */
  async drain(): Promise<void> {
    this.flushChunk();
    while (this.inflightBytes > 0 && this.failure === null) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    const failure = this.takeFailure();
    if (failure !== null) throw failure;
  }

  /** The 512-byte blocks the file takes on disk so far (st_blocks), or null when it cannot be told. */
  async allocated(): Promise<number | null> {
    return stat(this.path).then(
      (st) => st.blocks,
      () => null,
    );
  }

  async fsync(): Promise<void> {
    this.flushChunk();
    await this.ready;
    await this.pool.request(this.slot, { op: 'fsync', sid: this.sid });
    const failure = this.takeFailure();
    if (failure !== null) throw failure;
  }

  /**
   * Records which project path the file holds (`<file>.json`), so a restart after a crash versions
   * it (recovery.ts). `durable` (fsync) also makes the record and its directory entry durable.
   * With `hash` (known once the file is finished) a restart can version the path even when the crash
   * came after the store had taken the file in but before its version committed. `open`: written
   * when the file starts (still being written): a crash then keeps its bytes as a recovered version.
   */
  async journal(info: { projectId: string; path: string; executable: boolean; hash?: ContentHash; open?: true }, durable: boolean): Promise<void> {
    // Scattered writes would make a long record: the copy is finished instead (rare: random writes).
    if (this.fill !== null && this.fill.written.length > MAX_JOURNALED_RANGES) await this.complete();
    const text = JSON.stringify(this.fill === null ? info : { ...info, fill: this.fill });
    if (text === this.journaled && (!durable || text === this.journaledDurably)) return;
    // Written synchronously (a few hundred bytes): records follow each other in the order they were
    // made, and a close (flush) that journals waits for one syscall sequence instead of three round
    // trips through libuv's pool behind a background fill's IO (1.5-4.5 ms of a 1-byte append).
    writeFileSync(`${this.path}.json`, text, { mode: 0o600 });
    this.journaled = text;
    if (durable) {
      const handle = await open(`${this.path}.json`, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      const dir = await open(dirname(this.path), 'r');
      try {
        await dir.sync();
      } finally {
        await dir.close();
      }
      this.journaledDurably = text;
    }
  }

  get isJournaled(): boolean {
    return this.journaled !== null;
  }

  /** The file was versioned (or dropped): its journal record goes. */
  async unjournal(): Promise<void> {
    if (this.journaled === null) return;
    this.journaled = null;
    this.journaledDurably = null;
    await rm(`${this.path}.json`, { force: true });
  }

  /** Durable and closed: the hash of the content and its size. The file stays for the caller to adopt. */
  async finish(): Promise<{ hash: ContentHash; size: number }> {
    this.flushChunk();
    await this.ready;
    // A deferred failure no close reported (a write-back after the last one) fails this capture, once,
    // before the worker closes the file; the retry versions what the file holds. Thrown after the
    // worker had let the file go, it left a file nothing could read or capture any more.
    await this.drain();
    const reply = await this.pool.request(this.slot, { op: 'finish', sid: this.sid });
    this.fill = null;
    this.release();
    return { hash: `blake3:${reply.hash}`, size: reply.size ?? 0 };
  }

  /** Closes and removes the file. Never throws: it runs on cleanup paths. */
  async discard(): Promise<void> {
    this.chunk = null;
    await this.ready;
    this.release();
    await this.pool.request(this.slot, { op: 'close', sid: this.sid, unlink: this.path }).catch(() => {
      // The worker is gone; the file is removed at the next start (it carries our pid).
    });
    await this.unjournal().catch(() => {});
  }

  private release(): void {
    if (this.done) return;
    this.done = true;
    this.slot.files -= 1;
  }

  private flushChunk(): void {
    const chunk = this.chunk;
    if (chunk === null) return;
    this.chunk = null;
    const buffer = chunk.buf.buffer as ArrayBuffer;
    this.inflightBytes += chunk.len;
    const len = chunk.len;
    const seq = ++this.posted;
    this.pool.request(this.slot, { op: 'write', sid: this.sid, offset: chunk.offset, buf: buffer, len }, [buffer]).then(
      (reply: StagingReply) => this.settleWrite(len, seq, reply),
      (error: unknown) => this.settleWrite(len, seq, null, error),
    );
  }

  private settleWrite(len: number, seq: number, reply: StagingReply | null, error?: unknown): void {
    this.inflightBytes -= len;
    if (reply?.buf !== undefined && reply.buf.byteLength === CHUNK_BYTES && this.spare.length < SPARE_CHUNKS) this.spare.push(reply.buf);
    const reported = seq <= this.reportedThrough;
    if (reply?.error !== undefined && !reported) this.failure ??= workerError(reply.error);
    else if (error !== undefined && !reported) this.failure ??= error instanceof Error ? error : new StrataError('STORAGE_ERROR', { message: String(error) });
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  private post(message: Record<string, unknown>): void {
    this.pool.request(this.slot, { ...message, sid: this.sid }).catch((error: unknown) => {
      this.broken ??= error instanceof Error ? error : new StrataError('STORAGE_ERROR', { message: String(error) });
      this.failure ??= this.broken;
    });
  }
}

/** Adds [start, end) to sorted, disjoint ranges (merging what touches it). */
export function addRange(ranges: Array<[number, number]>, start: number, end: number): Array<[number, number]> {
  // The common case, appends and sequential writes: extend the last range.
  const last = ranges[ranges.length - 1];
  if (last !== undefined && start >= last[0] && start <= last[1]) {
    last[1] = Math.max(last[1], end);
    return ranges;
  }
  const out: Array<[number, number]> = [];
  let i = 0;
  while (i < ranges.length && ranges[i]![1] < start) out.push(ranges[i++]!);
  while (i < ranges.length && ranges[i]![0] <= end) {
    start = Math.min(start, ranges[i]![0]);
    end = Math.max(end, ranges[i]![1]);
    i++;
  }
  out.push([start, end]);
  while (i < ranges.length) out.push(ranges[i++]!);
  return out;
}
