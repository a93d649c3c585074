// Reading committed content for the kernel. Loose objects (everything above the store's small-object
// limit) are plain read-only files: open once per handle and answer each FUSE read with one positional
// read — never a stream, never the whole file in memory. Packed objects (≤ 64 KiB) come whole from
// the store's SQLite pack, once per handle. Without a local store (a remote one) each read is a ranged
// engine read.
import { type FileHandle, open } from 'node:fs/promises';
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
  constructor(private readonly handle: FileHandle) {}

  async read(into: Buffer, len: number, pos: number): Promise<number> {
    let done = 0;
    while (done < len) {
      const { bytesRead } = await this.handle.read(into, done, len - done, pos + done);
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

export const EMPTY_READER: ContentReader = new BufferReader(Buffer.alloc(0));

export async function openContent(source: ReadSource, content: { hash: ContentHash; size: number; versionId: string }): Promise<ContentReader> {
  if (content.size === 0) return EMPTY_READER;
  const store = source.store;
  if (store?.objectFile !== undefined) {
    const file = await store.objectFile(content.hash);
    if (file !== null) return new FileReader(await open(file, 'r'));
    return new BufferReader(await store.readBuffer(content.hash));
  }
  return new EngineReader(source, content.versionId, content.size);
}

/** The bytes of a small object (the caller bounds the size: ≤ MEMORY_LIMIT). */
export async function contentForSmall(source: ReadSource, content: { hash: ContentHash; size: number; versionId: string }): Promise<Buffer> {
  if (content.size === 0) return Buffer.alloc(0);
  if (source.store !== null) return source.store.readBuffer(content.hash);
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
  content: { hash: ContentHash; size: number; versionId: string },
  staging: StagingFile,
): Promise<void> {
  if (content.size === 0) return;
  const store = source.store;
  if (store?.objectFile !== undefined) {
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
