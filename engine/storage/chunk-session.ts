// Chunking a stream (an upload) as it arrives, on a chunking thread: the same cut search, hashes and
// pack staging as chunkFile, without first spooling the stream to a file and reading it back.
// Measured with 4 concurrent 256 MiB uploads over loopback HTTP, spooled then chunked: 2.0–2.7 s; see
// docs/benchmarks.md for this path.
//
// The main thread copies incoming pieces (a socket delivers ~64 KiB at a time) into BLOCK_BYTES buffers and
// transfers them to the thread, which sends each back once cut and hashed. At most WINDOW buffers are
// out at once: awaiting write() is the back-pressure that stops the upload from being read faster than
// it is chunked, so memory per session stays at (WINDOW + 1) blocks (16 MiB).
import type { ChunkerParams } from '../datasets/chunker-params.js';
import { chunkerParams } from '../datasets/chunker-params.js';
import { jsChunkerModuleUrl, loadNativeChunker, nativeChunkerPath } from '../datasets/gear-chunker.js';
import { StrataError } from '../errors.js';
import type { FetchOutcome, FetchSource } from '../ports/content-store.js';
import type { ContentHash } from '../types.js';
import type { ChunkFileResult, ChunkStaging, WorkerFailure, WorkerReply } from './chunk-file.js';
import { toError } from './chunk-file.js';
import { acquireChunkThread, type ChunkReply, type ChunkThread, releaseChunkThread } from './chunk-threads.js';

// 4 MiB blocks, three out at once: each hand-off to the thread (and its reply) is a wake-up that waits
// for a core on a loaded machine; with 1 MiB blocks and two out, a 500 MiB upload or pull left both
// the thread and the event loop mostly idle, waiting on each other.
const BLOCK_BYTES = 4 << 20;
const WINDOW = 3;

export class ChunkSession {
  private block: Uint8Array | null = null;
  private fill = 0;
  private readonly inflight: Promise<ChunkReply>[] = [];
  private readonly spare: ArrayBuffer[] = [];
  private closed = false;

  private constructor(
    private readonly thread: ChunkThread,
    private readonly params: ChunkerParams,
    private readonly native: boolean,
  ) {}

  /** Starts a session on a pooled thread (waiting for one if both are busy). */
  /**
   * With `cuts` (a manifest's shard sizes, in order), chunks end where those say instead of where the
   * cut search would put them, and no whole-content hash is made (the result's `hash` is null): the
   * caller checks each chunk against its shard instead.
   */
  static async open(params: ChunkerParams, options: { stage?: ChunkStaging; cuts?: number[] } = {}): Promise<ChunkSession> {
    const checked = chunkerParams(params);
    const addonPath = nativeChunkerPath();
    if (addonPath !== null) loadNativeChunker(addonPath);
    const thread = await acquireChunkThread();
    const session = new ChunkSession(thread, checked, addonPath !== null);
    try {
      const reply = await thread.request({
        op: 'begin',
        minSize: checked.minSize,
        avgSize: checked.avgSize,
        maxSize: checked.maxSize,
        addonPath,
        jsModuleUrl: jsChunkerModuleUrl(),
        stage: options.stage ?? null,
        cuts: options.cuts ?? null,
      });
      failIfError(reply);
    } catch (error) {
      session.closed = true;
      releaseChunkThread(thread);
      throw error;
    }
    return session;
  }

  async write(chunk: Uint8Array): Promise<void> {
    this.assertOpen();
    let offset = 0;
    while (offset < chunk.length) {
      if (this.block === null) {
        this.block = new Uint8Array(this.spare.pop() ?? new ArrayBuffer(BLOCK_BYTES));
        this.fill = 0;
      }
      const n = Math.min(BLOCK_BYTES - this.fill, chunk.length - offset);
      this.block.set(chunk.subarray(offset, offset + n), this.fill);
      this.fill += n;
      offset += n;
      if (this.fill === BLOCK_BYTES) await this.dispatch();
    }
  }

  /**
   * The body of a GET of `source.url` fed to the session by the thread itself (chunk-file-worker-source.ts
   * fetchInto): the bytes never reach the event loop. Instead of write() calls, not besides them.
   * A body cut midway stays fed (end() keeps its whole shards) and is reported as `cut`.
   */
  async fetch(source: FetchSource): Promise<FetchOutcome> {
    this.assertOpen();
    if (source.signal?.aborted) return { kind: 'body', size: 0, cut: { message: 'the fetch was cancelled', code: 'ABORT_ERR' } };
    const cancel = () => void this.thread.request({ op: 'cancel' }).catch(() => undefined);
    source.signal?.addEventListener('abort', cancel, { once: true });
    try {
      const reply = await this.thread.request({ op: 'fetch', url: source.url, headers: source.headers, timeoutMs: source.timeoutMs });
      failIfError(reply);
      if (typeof reply['status'] === 'number') {
        return { kind: 'status', status: reply['status'], body: reply['body'] as string, retryAfter: (reply['retryAfter'] as string | null) ?? null };
      }
      const cut = reply['cut'] as WorkerFailure | undefined;
      return { kind: 'body', size: reply['size'] as number, cut: cut === undefined ? null : { message: cut.message, code: cut.code ?? null } };
    } finally {
      source.signal?.removeEventListener('abort', cancel);
    }
  }

  /** The chunks, the whole hash (null with `cuts`) and size; the session is over either way. */
  async end(): Promise<Omit<ChunkFileResult, 'hash'> & { hash: ContentHash | null }> {
    this.assertOpen();
    try {
      if (this.block !== null && this.fill > 0) await this.dispatch();
      for (const reply of await Promise.all(this.inflight.splice(0))) failIfError(reply);
      const reply = (await this.thread.request({ op: 'end' })) as unknown as WorkerReply;
      if (reply.error !== undefined) throw toError(reply.error);
      return {
        params: this.params,
        chunks: reply.chunks ?? [],
        hash: reply.hash ?? null,
        size: reply.size ?? 0,
        implementation: this.native ? 'native' : 'js',
        packBytes: reply.packBytes ?? 0,
      };
    } catch (error) {
      await this.abort();
      throw error;
    } finally {
      this.finish();
    }
  }

  /** Drops the session and its pack file (if any). Safe to call more than once. */
  async abort(): Promise<void> {
    if (this.closed) return;
    try {
      await Promise.allSettled(this.inflight.splice(0));
      await this.thread.request({ op: 'abort' });
    } catch {
      // a dead thread has nothing left to clean; the store's start-up removes its temp file
    } finally {
      this.finish();
    }
  }

  private async dispatch(): Promise<void> {
    const block = this.block!;
    const len = this.fill;
    this.block = null;
    this.fill = 0;
    const sent = this.thread.request({ op: 'data', buf: block.buffer, len }, [block.buffer as ArrayBuffer]).then((reply) => {
      if (reply['buf'] instanceof ArrayBuffer) this.spare.push(reply['buf']);
      return reply;
    });
    this.inflight.push(sent);
    if (this.inflight.length >= WINDOW) failIfError(await this.inflight.shift()!);
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    releaseChunkThread(this.thread);
  }

  private assertOpen(): void {
    if (this.closed) throw new StrataError('INTERNAL', { message: 'The chunking session is over' });
  }
}

function failIfError(reply: ChunkReply): void {
  const error = reply['error'] as WorkerFailure | undefined;
  if (error !== undefined) throw toError(error);
}
