// Reading committed content for the kernel. Loose objects (everything above the store's small-object
// limit) are plain read-only files: open once per handle and answer each FUSE read with one positional
// read — never a stream, never the whole file in memory. Packed objects (≤ 64 KiB) come whole from
// the store's SQLite pack, once per handle. Without a local store (a remote one) each read is a ranged
// engine read. A dataset is read through its manifest: each read opens only the shards it covers
// (positional reads of their spans in the store's pack files), never the whole dataset.
import { type FileHandle, open } from 'node:fs/promises';
import { parseManifest, ShardIndex } from '../../engine/datasets/manifest.js';
import type { Engine } from '../../engine/engine-api.js';
import type { ContentStore } from '../../engine/ports/content-store.js';
import type { ContentHash } from '../../engine/types.js';
import type { StagingFile } from './staging-file.js';

export interface ContentReader {
  read(into: Buffer, len: number, pos: number): Promise<number>;
  close(): Promise<void>;
}

export interface ReadSource {
  engine: Engine;
  projectId: string;
  store: ContentStore | null;
}

class FileReader implements ContentReader {
  /** `base`/`size`: the object is that span of the file (a dataset shard inside a pack file). */
  constructor(
    private readonly handle: FileHandle,
    private readonly base = 0,
    private readonly size = Number.POSITIVE_INFINITY,
  ) {}

  async read(into: Buffer, len: number, pos: number): Promise<number> {
    let done = 0;
    len = Math.max(0, Math.min(len, this.size - pos));
    while (done < len) {
      const { bytesRead } = await this.handle.read(into, done, len - done, this.base + pos + done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    return done;
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

class BufferReader implements ContentReader {
  constructor(private readonly data: Buffer) {}

  async read(into: Buffer, len: number, pos: number): Promise<number> {
    if (pos >= this.data.length) return 0;
    return this.data.copy(into, 0, pos, Math.min(this.data.length, pos + len));
  }

  async close(): Promise<void> {}
}

class EngineReader implements ContentReader {
  constructor(
    private readonly source: ReadSource,
    private readonly versionId: string,
    private readonly size: number,
  ) {}

  async read(into: Buffer, len: number, pos: number): Promise<number> {
    if (pos >= this.size || len === 0) return 0;
    const end = Math.min(this.size, pos + len) - 1;
    const { stream } = await this.source.engine.readFile({
      projectId: this.source.projectId,
      versionId: this.versionId,
      range: { start: pos, end },
    });
    let done = 0;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      done += chunk.copy(into, done);
    }
    return done;
  }

  async close(): Promise<void> {}
}

/**
 * Reads a dataset shard by shard. The kernel sends reads of one handle concurrently (readahead), and
 * neighbouring reads often sit in different shards: each shard's reader is counted while in use and
 * only an idle one is closed, keeping the last few open because reads are mostly sequential.
 */
class DatasetReader implements ContentReader {
  private readonly shards = new Map<ContentHash, { reader: Promise<ContentReader>; users: number }>();

  constructor(
    private readonly store: ContentStore,
    private readonly index: ShardIndex,
  ) {}

  async read(into: Buffer, len: number, pos: number): Promise<number> {
    const size = this.index.manifest.size;
    if (pos >= size || len === 0) return 0;
    let done = 0;
    for (const piece of this.index.pieces(pos, Math.min(size, pos + len) - 1)) {
      const want = piece.to - piece.from + 1;
      const got = await this.withShard(piece.hash, (reader) => reader.read(into.subarray(done), want, piece.from));
      done += got;
      if (got < want) break;
    }
    return done;
  }

  private async withShard<T>(hash: ContentHash, use: (reader: ContentReader) => Promise<T>): Promise<T> {
    let slot = this.shards.get(hash);
    if (slot === undefined) {
      slot = { reader: this.openShard(hash), users: 0 };
    } else {
      this.shards.delete(hash); // re-inserted below: the map's order is least recently used first
    }
    this.shards.set(hash, slot);
    slot.users++;
    try {
      return await use(await slot.reader);
    } catch (error) {
      if (this.shards.get(hash) === slot) this.shards.delete(hash); // a failed open is not kept
      throw error;
    } finally {
      slot.users--;
      this.closeIdle(OPEN_SHARDS);
    }
  }

  private async openShard(hash: ContentHash): Promise<ContentReader> {
    if (this.store.objectSpan !== undefined) {
      // Positional reads of the shard's span, in its loose file or its pack. A pack compacted away
      // between the lookup and the open is looked up once more; an open handle outlives the unlink.
      for (let attempt = 0; attempt < 2; attempt++) {
        const span = await this.store.objectSpan(hash);
        if (span === null) break;
        try {
          return new FileReader(await open(span.file, 'r'), span.offset, span.size);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        }
      }
    }
    return new BufferReader(await this.store.readBuffer(hash));
  }

  private closeIdle(keep: number): Promise<unknown> {
    const closing: Promise<void>[] = [];
    for (const [hash, slot] of this.shards) {
      if (this.shards.size <= keep) break;
      if (slot.users > 0) continue;
      this.shards.delete(hash);
      closing.push(slot.reader.then((reader) => reader.close()).catch(() => {}));
    }
    return Promise.all(closing);
  }

  async close(): Promise<void> {
    await this.closeIdle(0);
  }
}

/** Shard files a dataset reader keeps open between reads. */
const OPEN_SHARDS = 4;

export const EMPTY_READER: ContentReader = new BufferReader(Buffer.alloc(0));

export interface ContentRef {
  hash: ContentHash;
  size: number;
  versionId: string;
  /** `hash` names a dataset manifest */
  dataset?: boolean;
}

export async function openContent(source: ReadSource, content: ContentRef): Promise<ContentReader> {
  if (content.size === 0) return EMPTY_READER;
  const store = source.store;
  if (content.dataset === true) {
    if (store === null) return new EngineReader(source, content.versionId, content.size);
    const { manifest } = await source.engine.getDatasetManifest({ projectId: source.projectId, versionId: content.versionId });
    return new DatasetReader(store, new ShardIndex(manifest));
  }
  if (store?.objectFile !== undefined) {
    const file = await store.objectFile(content.hash);
    if (file !== null) return new FileReader(await open(file, 'r'));
    return new BufferReader(await store.readBuffer(content.hash));
  }
  return new EngineReader(source, content.versionId, content.size);
}

/** The bytes of a small object (the caller bounds the size: ≤ MEMORY_LIMIT). */
export async function contentForSmall(source: ReadSource, content: ContentRef): Promise<Buffer> {
  if (content.size === 0) return Buffer.alloc(0);
  if (source.store !== null && content.dataset !== true) return source.store.readBuffer(content.hash);
  const { stream } = await source.engine.readFile({ projectId: source.projectId, versionId: content.versionId });
  const parts: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) parts.push(chunk);
  return Buffer.concat(parts);
}

/**
 * Copy-on-write: fills an empty staging file with stored content — a worker-side file copy for a
 * loose object, the packed bytes, or (no local store) the engine's stream, chunk by chunk.
 */
export async function copyContentInto(
  source: ReadSource,
  content: ContentRef,
  staging: StagingFile,
): Promise<void> {
  if (content.size === 0) return;
  const store = source.store;
  if (store?.objectFile !== undefined && content.dataset !== true) {
    const file = await store.objectFile(content.hash);
    if (file !== null) return staging.copyFrom(file);
    const data = await store.readBuffer(content.hash);
    return staging.write(0, data, data.length);
  }
  const { stream } = await source.engine.readFile({ projectId: source.projectId, versionId: content.versionId });
  let pos = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    for (let off = 0; off < chunk.length; off += COPY_PIECE) {
      const piece = chunk.subarray(off, Math.min(chunk.length, off + COPY_PIECE));
      await staging.write(pos, piece, piece.length);
      pos += piece.length;
    }
  }
}

const COPY_PIECE = 1 << 20;

/** A piece of content as a span of a plain local file. */
export interface ContentSpan {
  file: string;
  offset: number;
  size: number;
}

/**
 * Where a stored content's bytes lie, in order, as spans of local files: a loose object is its file,
 * a dataset the spans of its shards. Null when some part is not a plain local file (packed, remote):
 * the caller copies through a reader then.
 */
export async function contentSpans(store: ContentStore | null, hash: ContentHash, dataset: boolean): Promise<ContentSpan[] | null> {
  if (store === null) return null;
  if (!dataset) {
    const span = store.objectSpan === undefined ? null : await store.objectSpan(hash);
    return span === null ? null : [span];
  }
  if (store.objectSpan === undefined) return null;
  const manifest = parseManifest(await store.readBuffer(hash), hash);
  const hashes = manifest.shards.map((shard) => shard.hash);
  const found = store.objectSpans !== undefined ? await store.objectSpans(hashes) : await Promise.all(hashes.map((shard) => store.objectSpan!(shard)));
  const spans: ContentSpan[] = [];
  for (const span of found) {
    if (span === null) return null;
    spans.push(span);
  }
  return spans;
}

/** A reader over spans of local files (contentSpans), each file opened once. */
export async function openSpans(spans: ContentSpan[]): Promise<SpanReader> {
  const handles = new Map<string, FileHandle>();
  try {
    for (const { file } of spans) if (!handles.has(file)) handles.set(file, await open(file, 'r'));
  } catch (error) {
    await Promise.all([...handles.values()].map((handle) => handle.close()));
    throw error;
  }
  return new SpanReader(spans, handles);
}

export class SpanReader implements ContentReader {
  private readonly starts: number[] = [];

  constructor(
    private readonly spans: ContentSpan[],
    private readonly handles: Map<string, FileHandle>,
  ) {
    let at = 0;
    for (const span of spans) {
      this.starts.push(at);
      at += span.size;
    }
  }

  async read(into: Buffer, len: number, pos: number): Promise<number> {
    let done = 0;
    for (let i = 0; i < this.spans.length && done < len; i++) {
      const span = this.spans[i]!;
      const from = pos + done - this.starts[i]!;
      if (from < 0 || from >= span.size) continue;
      const got = await new FileReader(this.handles.get(span.file)!, span.offset, span.size).read(into.subarray(done), Math.min(len - done, span.size - from), from);
      done += got;
      if (got === 0) break;
    }
    return done;
  }

  /** The spans as [descriptor, offset in its file, size] triples, in content order (native/fuse readMap). */
  table(): Float64Array {
    const table = new Float64Array(this.spans.length * 3);
    for (const [i, span] of this.spans.entries()) table.set([this.handles.get(span.file)!.fd, span.offset, span.size], i * 3);
    return table;
  }

  async close(): Promise<void> {
    await Promise.all([...this.handles.values()].map((handle) => handle.close()));
  }
}
