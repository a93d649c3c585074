// Writing a dataset's bytes to a consumer that says when it is done with each chunk (a socket's write
// callback), through a few buffers that are reused instead of one new buffer per read.
//
// Why: V8 before 14.8 counts every byte allocated in buffers toward its old generation's limit, and a
// fresh 1 MiB buffer per file read made `strata serve` run 10-31 full (mark-compact) collections of its
// heap per 500 MiB fs/read (docs/benchmarks.md, "Full collections started by buffers"), about half its
// CPU in a storm. Reused buffers allocate nothing per read. The generic stream (openDataset) cannot do
// this: whoever reads it may keep the chunks.
//
// The bytes are read from where the store keeps the shards (objectSpans: spans of local pack files).
// Whole shards are verified as they pass, as the store's own reader does: a shard whose hash does not
// match fails the pump after its bytes were handed over, so the consumer must treat the transfer as
// failed only at the end (the HTTP route destroys the response: the client sees a short body).
import type { FileHandle } from 'node:fs/promises';
import { open } from 'node:fs/promises';
import type { ContentStore } from '../ports/content-store.js';
import { createHasher } from '../hash.js';
import { corruptError } from '../storage/local-content-store-read.js';
import type { ShardPiece } from './manifest.js';

/** A consumer that calls `done` once it no longer needs `chunk` (the pump then reuses its memory). */
export interface ChunkSink {
  write(chunk: Uint8Array, done: (error?: Error | null) => void): void;
}

/** Writes a read's bytes to `sink` through reused buffers until done, failed or `signal` aborts. */
export type ChunkWriter = (sink: ChunkSink, signal: AbortSignal) => Promise<void>;

/** 8 × 1 MiB: the read-ahead the stream path has (READ_AHEAD_BYTES), so a consumer in another process finds megabytes ready. */
export const PUMP_BUFFERS = 8;
export const PUMP_BUFFER_BYTES = 1 << 20;

type Span = { file: string; offset: number; size: number };

/**
 * Each piece's span in a pack file, or null for a shard the store keeps among its small objects (the
 * last shard of a file is often that small); null altogether when the store has no spans (the caller
 * streams). One small shard used to send the whole dataset down the streaming path, a new 1 MiB buffer
 * per read (48 MiB allocated for 48 MiB sent, in test/sync-dataset-upload-pooled whenever the random
 * content's last shard came out small).
 */
export async function spansOf(store: ContentStore, pieces: readonly ShardPiece[]): Promise<Array<Span | null> | null> {
  if (store.objectSpans === undefined) return null;
  return store.objectSpans(pieces.map((piece) => piece.hash));
}

/**
 * `verify: false` skips the hashing of whole shards: for a reader whose receiver verifies every shard
 * itself (a dataset's upload: the server cuts the bytes and checks each shard and the whole against
 * the manifest), hashing here would only repeat it on this event loop.
 */
export async function pumpPieces(
  store: ContentStore,
  pieces: readonly ShardPiece[],
  firstSpans: Array<Span | null>,
  sink: ChunkSink,
  signal: AbortSignal,
  options: { verify?: boolean } = {},
): Promise<void> {
  const verify = options.verify ?? true;
  const free: Buffer[] = [];
  let allocated = 0;
  let waiting: (() => void) | null = null;
  let sinkError: Error | null = null;
  const release = (buffer: Buffer) => (error?: Error | null) => {
    if (error) sinkError ??= error;
    free.push(buffer);
    const wake = waiting;
    waiting = null;
    wake?.();
  };
  const onAbort = () => {
    const wake = waiting;
    waiting = null;
    wake?.();
  };
  signal.addEventListener('abort', onAbort, { once: true });
  async function take(): Promise<Buffer> {
    for (;;) {
      if (signal.aborted) throw signal.reason ?? new Error('aborted');
      if (sinkError !== null) throw sinkError;
      const buffer = free.pop();
      if (buffer !== undefined) return buffer;
      if (allocated < PUMP_BUFFERS) {
        allocated++;
        return Buffer.allocUnsafeSlow(PUMP_BUFFER_BYTES);
      }
      await new Promise<void>((resolve) => {
        waiting = resolve;
      });
    }
  }
  let handle: FileHandle | null = null;
  let file: string | null = null;
  try {
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i]!;
      const found = firstSpans[i] ?? null;
      if (found === null) {
        // A small shard (the store's object pack): read whole, written once the sink has the last one.
        const data = await store.readBuffer(piece.hash);
        const chunk = data.subarray(piece.from, piece.to + 1);
        await new Promise<void>((resolve, reject) => {
          // A consumer that failed may never call back: the signal says so (as take() hears it).
          const stop = () => reject(sinkError ?? signal.reason ?? new Error('aborted'));
          if (signal.aborted) return stop();
          signal.addEventListener('abort', stop, { once: true });
          sink.write(chunk, (error) => {
            signal.removeEventListener('abort', stop);
            if (error) reject(error);
            else resolve();
          });
        });
        continue;
      }
      let span = found;
      if (span.file !== file || handle === null) {
        await handle?.close();
        handle = null;
        try {
          handle = await open(span.file, 'r');
        } catch (error) {
          // Compaction moved the shard to a new pack since the spans were read: ask where it is now.
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
          const moved = await store.objectSpan!(piece.hash);
          if (moved === null) throw error;
          span = moved;
          handle = await open(span.file, 'r');
        }
        file = span.file;
      }
      // An open handle keeps reading the old pack even if compaction unlinks it meanwhile.
      const reader: FileHandle = handle;
      const hasher = verify && piece.whole ? createHasher() : null;
      for (let at = piece.from; at <= piece.to; ) {
        const buffer = await take();
        const wanted = Math.min(PUMP_BUFFER_BYTES, piece.to - at + 1);
        const { bytesRead } = await reader.read(buffer, 0, wanted, span.offset + at);
        if (bytesRead === 0) throw new Error(`shard ${piece.hash} ends early in ${span.file}`);
        const chunk = buffer.subarray(0, bytesRead);
        hasher?.update(chunk);
        at += bytesRead;
        sink.write(chunk, release(buffer));
      }
      if (hasher !== null) {
        const actual = hasher.digest();
        if (actual !== piece.hash) throw corruptError(piece.hash, actual);
      }
    }
    // Done only when the consumer released every buffer: a write error surfaces here.
    while (free.length < allocated) {
      if (sinkError !== null) throw sinkError;
      if (signal.aborted) throw signal.reason ?? new Error('aborted');
      await new Promise<void>((resolve) => {
        waiting = resolve;
      });
    }
    if (sinkError !== null) throw sinkError;
  } finally {
    signal.removeEventListener('abort', onAbort);
    await handle?.close();
  }
}
