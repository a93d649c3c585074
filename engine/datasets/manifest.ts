// The dataset manifest: the object a dataset's version records point to. Canonical: exactly one
// encoding per dataset (fixed key order, no whitespace, integers only, one trailing newline), so
// the same dataset always has the same manifest hash, and a parser can prove a stored manifest
// canonical by re-encoding it. Example (shards abbreviated):
//
//   {"format":"strata.dataset/1","chunker":{"algorithm":"fastcdc-gear64-v1","minSize":262144,
//    "avgSize":1048576,"maxSize":4194304},"size":2097152,"hash":"blake3:…",
//    "shards":[{"hash":"blake3:…","size":1048576},{"hash":"blake3:…","size":1048576}]}
//
// (one line in reality). ~85 bytes per shard: a 2 GB dataset at 1 MiB shards is ~180 KB.
import { type ChunkerParams, chunkerParams } from './chunker-params.js';
import { StrataError } from '../errors.js';
import type { ContentHash } from '../types.js';

export const MANIFEST_FORMAT = 'strata.dataset/1';

export interface Shard {
  hash: ContentHash;
  size: number;
}

export interface DatasetManifest {
  format: typeof MANIFEST_FORMAT;
  chunker: ChunkerParams;
  /** bytes of the assembled dataset */
  size: number;
  /** BLAKE3 of the assembled bytes */
  hash: ContentHash;
  /** in file order; their sizes add up to `size` */
  shards: Shard[];
}

const HASH = /^blake3:[0-9a-f]{64}$/;

export function encodeManifest(manifest: DatasetManifest): Buffer {
  const { chunker } = manifest;
  const head =
    `{"format":"${MANIFEST_FORMAT}","chunker":{"algorithm":"${chunker.algorithm}","minSize":${chunker.minSize},` +
    `"avgSize":${chunker.avgSize},"maxSize":${chunker.maxSize}},"size":${manifest.size},"hash":"${manifest.hash}","shards":[`;
  const shards = manifest.shards.map((s) => `{"hash":"${s.hash}","size":${s.size}}`).join(',');
  return Buffer.from(`${head}${shards}]}\n`, 'utf8');
}

function invalid(why: string, hash?: ContentHash): StrataError {
  return new StrataError('DATASET_MANIFEST_INVALID', { message: `A stored dataset manifest is not valid: ${why}`, details: hash === undefined ? {} : { hash } });
}

/** Strict parse: the bytes must be exactly the canonical encoding of a consistent manifest. */
export function parseManifest(bytes: Uint8Array, hashForErrors?: ContentHash): DatasetManifest {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
  } catch {
    throw invalid('not JSON', hashForErrors);
  }
  const m = value as Partial<DatasetManifest> | null;
  if (m === null || typeof m !== 'object' || m.format !== MANIFEST_FORMAT) throw invalid(`format is not ${MANIFEST_FORMAT}`, hashForErrors);
  let chunker: ChunkerParams;
  try {
    chunker = chunkerParams(m.chunker ?? {});
  } catch (error) {
    throw invalid(`chunker: ${(error as Error).message}`, hashForErrors);
  }
  if (!Number.isSafeInteger(m.size) || (m.size as number) < 0) throw invalid('size', hashForErrors);
  if (typeof m.hash !== 'string' || !HASH.test(m.hash)) throw invalid('hash', hashForErrors);
  if (!Array.isArray(m.shards)) throw invalid('shards', hashForErrors);
  let total = 0;
  for (const shard of m.shards as Shard[]) {
    if (shard === null || typeof shard.hash !== 'string' || !HASH.test(shard.hash) || !Number.isSafeInteger(shard.size) || shard.size <= 0) {
      throw invalid('a shard entry', hashForErrors);
    }
    total += shard.size;
  }
  if (total !== m.size) throw invalid('shard sizes do not add up to size', hashForErrors);
  const manifest: DatasetManifest = { format: MANIFEST_FORMAT, chunker, size: m.size as number, hash: m.hash as ContentHash, shards: m.shards as Shard[] };
  if (!encodeManifest(manifest).equals(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))) throw invalid('not in canonical form', hashForErrors);
  return manifest;
}

/** Bytes [from, to] (inclusive) of one shard. */
export interface ShardPiece {
  hash: ContentHash;
  from: number;
  to: number;
  /** the piece is the whole shard */
  whole: boolean;
}

/** A manifest with its shard offsets, for range reads (mount reads, HTTP Range). */
export class ShardIndex {
  /** byte offset of each shard in the assembled dataset */
  private readonly offsets: number[];

  constructor(readonly manifest: DatasetManifest) {
    this.offsets = new Array<number>(manifest.shards.length);
    let at = 0;
    for (let i = 0; i < manifest.shards.length; i++) {
      this.offsets[i] = at;
      at += manifest.shards[i]!.size;
    }
  }

  /** Shard pieces covering bytes [start, end] (inclusive) of the dataset, in order. */
  pieces(start: number, end: number): ShardPiece[] {
    const { shards } = this.manifest;
    const pieces: ShardPiece[] = [];
    if (shards.length === 0 || end < start) return pieces;
    // Binary search for the last shard starting at or before `start`.
    let lo = 0;
    let hi = shards.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.offsets[mid]! <= start) lo = mid;
      else hi = mid - 1;
    }
    for (let i = lo; i < shards.length && this.offsets[i]! <= end; i++) {
      const shard = shards[i]!;
      const at = this.offsets[i]!;
      const from = Math.max(0, start - at);
      const to = Math.min(shard.size - 1, end - at);
      pieces.push({ hash: shard.hash, from, to, whole: from === 0 && to === shard.size - 1 });
    }
    return pieces;
  }
}
