import type { Readable } from 'node:stream';
import type { FileHandle } from 'node:fs/promises';
import type { ChunkerParams } from '../datasets/chunker-params.js';
import type { ContentHash } from '../types.js';

export interface PutResult {
  hash: ContentHash;
  size: number;
  /** false when the object was already stored (deduplicated) */
  created: boolean;
}

export interface PutOptions {
  /** Reject with BODY_TOO_LARGE (and store nothing) once more than this many bytes arrive. */
  maxBytes?: number;
  /** Reject with CONTENT_CORRUPT (and store nothing) if the bytes do not hash to this. */
  expectedHash?: ContentHash;
  /** Called as bytes are consumed, for progress reporting. */
  onProgress?: (bytes: number) => void;
  /**
   * putFile: the file already open for reading (read at explicit offsets; it stays the caller's to
   * close), so a small file is read without opening it again. A store may ignore it.
   */
  handle?: FileHandle;
}

export interface AdoptOptions {
  /** the content's hash, computed by the caller from exactly these bytes (trusted, not re-checked) */
  knownHash?: ContentHash;
  /** Reject with BODY_TOO_LARGE (leaving the file in place) if the file is larger. */
  maxBytes?: number;
}

export interface DatasetFileOptions {
  /** remove the file once its shards are stored (the mount's staging files); kept on failure */
  consume?: boolean;
  /** Reject with BODY_TOO_LARGE (storing nothing) if the file is larger. */
  maxBytes?: number;
}

export interface DatasetStreamOptions {
  maxBytes?: number;
  /**
   * The manifest the bytes must be (a pulled dataset; an upload whose manifest came first). A store may
   * cut at its shards' sizes and check each piece against its shard's hash instead of searching for
   * cut points and hashing the whole again; the result's `hash` is then `expect.hash` when every
   * piece matched, else the hash of the first piece that did not (never `expect.hash`). Pieces that
   * match are kept either way. A store may also ignore it and chunk as usual.
   */
  expect?: { hash: ContentHash; shards: ReadonlyArray<{ hash: ContentHash; size: number }> };
  /**
   * With `expect`: the bytes are about to be written out as a file (a pulled dataset that watch mode
   * brings to disk). A store may also write them to a file of its own from the same buffers as it
   * stores them, and hand that file to writeObjectsTo for the same shards for a while instead of
   * reading its copy back and hashing it again. Nothing changes for callers that ignore it.
   */
  keepCopy?: boolean;
}

/**
 * Bytes a store may GET itself, off the event loop (a pulled dataset: putDatasetFetch). The caller
 * (daemon/sync/remote.ts) owns what the URL and headers mean and how a failure is classified.
 */
export interface FetchSource {
  url: string;
  headers: Record<string, string>;
  /** the connection is cut after this long without a byte */
  timeoutMs: number;
  signal?: AbortSignal;
}

/** How a FetchSource's GET ended: a 2xx body (cut midway or not), or another answer (its body as text). */
export type FetchOutcome =
  | { kind: 'body'; size: number; cut: { message: string; code: string | null } | null }
  | { kind: 'status'; status: number; body: string; retryAfter: string | null };

export interface DatasetIngest {
  /** BLAKE3 of the whole file, and its size */
  hash: ContentHash;
  size: number;
  /** the file's content-defined chunks, in order (a repeated chunk appears each time) */
  shards: Array<{ hash: ContentHash; size: number }>;
  /** shards this call stored (the others were already in the store) */
  newShards: number;
  newBytes: number;
}

export interface ObjectInfo {
  hash: ContentHash;
  size: number;
  /** last time the object was written or deduplicated against, in ms since the epoch */
  touchedAtMs: number;
}

export interface ReadRange {
  /** first byte, inclusive */
  start: number;
  /** last byte, inclusive */
  end: number;
}

/**
 * A content-addressed store of immutable objects keyed by BLAKE3 hash.
 *
 * Contract every implementation passes (test/conformance/content-store.ts):
 * - `put*` resolves only once the object is durable (fsynced and visible under its final name);
 *   a crash at any instant leaves either no object or a complete, correct one.
 * - Hashing of large inputs happens off the event loop; inputs are streamed, never held whole.
 * - A second put of the same bytes stores nothing new and refreshes `touchedAtMs`, so a concurrent
 *   garbage collector that looks at `touchedAtMs` spares it.
 * - `open` verifies whole-object reads against the hash and fails the stream with CONTENT_CORRUPT.
 */
export interface ContentStore {
  /**
   * Objects up to this size are kept where the metadata repository can store them itself, in the
   * transaction that commits the record referencing them (VersionCommit.content): a write of small
   * content is then one durable transaction instead of two. Absent: every object goes through `put`.
   */
  readonly contentWithRecordMaxBytes?: number;
  /** Stream bytes in. */
  put(source: AsyncIterable<Uint8Array>, options?: PutOptions): Promise<PutResult>;
  /** Small in-memory content (already bounded by the caller). */
  putBuffer(data: Uint8Array, options?: Omit<PutOptions, 'onProgress'>): Promise<PutResult>;
  /**
   * Many small contents at once (each bounded by the caller), results in the same order: one call
   * and one durable commit for all of them instead of one each (a git push's thousands of blobs).
   */
  putBuffers(datas: Uint8Array[]): Promise<PutResult[]>;
  /** Ingest a file of the local filesystem by path (read, hashed and copied off the event loop). */
  putFile(absolutePath: string, options?: PutOptions): Promise<PutResult>;
  /**
   * Optional: take ownership of a finished local file instead of copying it (the mount's staging
   * files). On success the file is gone from `absolutePath` (moved into the store, or removed because
   * the object already existed); on failure it is left where it was. A `knownHash` is trusted: the
   * caller hashed exactly these bytes (e.g. while they were written); without it the store hashes the
   * file off the event loop. Stores that cannot move files (another filesystem, remote) omit this and
   * callers fall back to `putFile`.
   */
  adoptFile?(absolutePath: string, options?: AdoptOptions): Promise<PutResult>;
  /**
   * Optional: the absolute path of the object when it is kept as a plain local file (read-only; never
   * modify it), so a reader can use positional reads; null when it is stored otherwise (packed).
   * Throws CONTENT_NOT_FOUND if absent.
   */
  objectFile?(hash: ContentHash): Promise<string | null>;
  /**
   * Optional: where the object's bytes lie in a plain local file (read-only): a loose object is its
   * whole file, a dataset shard a span of a pack file. Null when stored otherwise (SQLite pack) or
   * absent. The file may be replaced by compaction: a reader that gets ENOENT asks again.
   */
  objectSpan?(hash: ContentHash): Promise<{ file: string; offset: number; size: number } | null>;
  /** Optional: objectSpan for many objects at once (a dataset's shards), in their order. */
  objectSpans?(hashes: readonly ContentHash[]): Promise<Array<{ file: string; offset: number; size: number } | null>>;
  /**
   * Optional: creates `target` (which must not exist) with `mode`, holding the objects' bytes in order,
   * each checked against its hash (here, or as they were stored: a copy kept by putDatasetStream),
   * fsynced; off the event loop. False (and no file) when some object is
   * not kept in a file this can read from (the caller streams it instead).
   */
  writeObjectsTo?(objects: ReadonlyArray<{ hash: ContentHash; size: number }>, target: string, mode: number): Promise<boolean>;
  /**
   * Optional: store a local file as content-defined shards, each an ordinary object; only shards not
   * stored yet are written. Chunking and hashing run off the event loop. If the file changes while
   * it is read, a shard fails its hash check and the call rejects with CONTENT_CORRUPT, storing no
   * manifest (the caller writes that). Without it, datasets are not available on this store.
   */
  putDatasetFile?(absolutePath: string, params: ChunkerParams, options?: DatasetFileOptions): Promise<DatasetIngest>;
  /**
   * Optional (with putDatasetFile): the same for a stream (an upload), cut as it arrives; only shards
   * not stored yet are written. BODY_TOO_LARGE past maxBytes, storing nothing.
   */
  putDatasetStream?(source: AsyncIterable<Uint8Array>, params: ChunkerParams, options?: DatasetStreamOptions): Promise<DatasetIngest>;
  /**
   * Optional: putDatasetStream of the body of a GET the store makes itself, off the event loop. A
   * body cut midway keeps what arrived, as a stream that ends early would; `fetched` says how it ended
   * (with another answer than 2xx nothing is stored and `ingest` is null).
   */
  putDatasetFetch?(source: FetchSource, params: ChunkerParams, options?: DatasetStreamOptions): Promise<{ ingest: DatasetIngest | null; fetched: FetchOutcome }>;
  has(hash: ContentHash): Promise<boolean>;
  stat(hash: ContentHash): Promise<ObjectInfo | null>;
  /** Throws CONTENT_NOT_FOUND if absent. A ranged read is not verified (it cannot be, cheaply). */
  open(hash: ContentHash, range?: ReadRange): Promise<Readable>;
  /** Whole object into memory: only for small objects (the caller knows the size). */
  readBuffer(hash: ContentHash): Promise<Buffer>;
  /**
   * Optional: several small objects at once, each verified like readBuffer (a git export reads
   * thousands in a row). CONTENT_NOT_FOUND / CONTENT_CORRUPT as readBuffer. `once`: each is read
   * once (a bulk transfer): the store need not keep them in its caches.
   */
  readBuffers?(hashes: ContentHash[], options?: { once?: boolean }): Promise<Map<ContentHash, Buffer>>;
  /** Re-hash the stored bytes; false if missing or corrupt. */
  verify(hash: ContentHash): Promise<'ok' | 'missing' | 'corrupt'>;
  delete(hash: ContentHash): Promise<void>;
  /**
   * Optional: garbage collection's delete on a store other processes write to as well (server
   * replicas over one bucket, ports/object-guard.ts): deletes unless the object was touched within
   * `graceMs` on the guard's clock or is referenced; true if it deleted. Without it, collectors call
   * delete under the engine's own GC lock, which covers every writer there is.
   */
  collect?(hash: ContentHash, graceMs: number): Promise<boolean>;
  /**
   * Optional: reclaim space that deletes left inside container files (the local store's shard packs).
   * Garbage collection calls it after deleting; safe beside writes and reads.
   */
  compact?(): Promise<{ bytesFreed: number }>;
  /**
   * Optional: space the store keeps aside so that collection can still delete on a full disk (the
   * local store's reserve file; a delete writes its index first). releaseReserve gives it back (true:
   * there was some to give); keepReserve makes it again when the disk has room, and never throws.
   */
  releaseReserve?(): Promise<boolean>;
  keepReserve?(): Promise<void>;
  list(): AsyncIterable<ObjectInfo>;
  close(): Promise<void>;
}
