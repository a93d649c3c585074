// A dataset version going up (issue 14): its manifest, then the shards the server project lacks.
//
// - Lacks (nearly) all of them — a first push: the assembled bytes stream up in one request and the
//   server cuts them into the same shards (one pack file there, not a request and a file per shard).
// - Lacks a few — an edit of a big file: each is sent as a delta against the version it replaced
//   (delta.ts): copies of the old shards' bytes the server has, plus the bytes that changed. The
//   manifest too: one line of JSON whose few changed entries are all that differ. A 1 MiB overwrite in
//   a 2 GB dataset sends about 1 MiB, where the changed shards whole were ~3 MiB.
// - The rest of an upload that was cut off (the server kept every shard that had arrived whole):
//   only what is still missing.
//
// Which shards to ask about: those the version it replaced did not have (the server has those: the
// base went up first), or all of them when `checkAll` (a retry after the server said otherwise).
import { type FileHandle, open } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { type DatasetManifest, parseManifest, ShardIndex } from '../../engine/datasets/manifest.js';
import { pumpPieces, spansOf } from '../../engine/datasets/pump-dataset.js';
import type { ContentStore } from '../../engine/engine-api.js';
import type { ComposedObject } from '../../engine/commands/sync-objects.js';
import type { ContentHash } from '../../engine/types.js';
import { type DeltaPart, deltaParts, literalBytes } from './delta.js';
import { type Remote, RemoteError } from './remote.js';
import { uploadMissing, WHOLE_DATASET_SHARE } from './transfer.js';

/** Old bytes around a changed shard that a delta may copy from, on each side. */
const WINDOW_SLACK = 1024 * 1024;
const SHARD_BLOCK = 4096;
const MANIFEST_BLOCK = 64;
/** A delta worth sending: at most this share of the object is new bytes. */
const DELTA_WORTH = 0.75;
const COMPOSE_LITERAL_BYTES = 16 * 1024 * 1024;
const COMPOSE_OBJECTS = 100;

export interface DatasetUpload {
  manifestHash: ContentHash;
  /** the manifest of the version this one replaced, when that was a dataset */
  baseManifestHash: ContentHash | null;
  openAssembled: () => Promise<Readable>;
  checkAll: boolean;
}

interface Old {
  hash: ContentHash;
  bytes: Buffer;
  manifest: DatasetManifest;
}

/** Bytes sent (deltas count what went on the wire). */
export async function uploadDataset(remote: Remote, store: ContentStore, upload: DatasetUpload, signal: AbortSignal): Promise<number> {
  const { manifestHash } = upload;
  const bytes = await store.readBuffer(manifestHash);
  const manifest = parseManifest(bytes, manifestHash);
  const old = await oldManifest(store, upload.baseManifestHash);
  const oldShards = new Set(old?.manifest.shards.map((shard) => shard.hash) ?? []);
  const shardSizes = new Map(manifest.shards.map((shard) => [shard.hash, shard.size]));
  const ask = [manifestHash, ...[...shardSizes.keys()].filter((hash) => upload.checkAll || !oldShards.has(hash))];
  const missing = new Set<string>();
  for (let i = 0; i < ask.length; i += 1000) for (const hash of await remote.missing(ask.slice(i, i + 1000), signal)) missing.add(hash);
  const missingShards = new Map([...shardSizes].filter(([hash]) => missing.has(hash)));
  const total = [...shardSizes.values()].reduce((sum, size) => sum + size, 0);
  const missingBytes = [...missingShards.values()].reduce((sum, size) => sum + size, 0);
  if (missingShards.size > 0 && missingBytes >= total * WHOLE_DATASET_SHARE) {
    let sent = 0;
    if (missing.has(manifestHash)) {
      await remote.uploadBatch([{ hash: manifestHash, data: bytes }], signal);
      sent += bytes.length;
    }
    const pieces = manifest.shards.map((shard) => ({ hash: shard.hash, from: 0, to: shard.size - 1, whole: true }));
    const spans = await spansOf(store, pieces);
    if (spans !== null) {
      // Through a few reused buffers (pump-dataset.ts): a new 1 MiB buffer per read made the daemon
      // run a full collection of its heap every ~20 MiB sent (28 in a 500 MiB first sync, ~1 s of its
      // CPU). Not hashed here: the server checks every shard and the whole against the manifest.
      await remote.uploadDataset(manifestHash, manifest.size, (sink, stop) => pumpPieces(store, pieces, spans, sink, stop, { verify: false }), signal);
      return sent + manifest.size;
    }
    const stream = store.objectSpan === undefined ? await upload.openAssembled() : rawAssembled(store, manifest);
    try {
      await remote.uploadDataset(manifestHash, manifest.size, stream, signal);
    } finally {
      stream.destroy();
    }
    return sent + manifest.size;
  }
  const whole = new Map(missingShards);
  if (missing.has(manifestHash)) whole.set(manifestHash, bytes.length);
  let sent = 0;
  if (old !== null && whole.size > 0) {
    const deltas = await deltasAgainst(store, old, { hash: manifestHash, bytes, manifest }, whole);
    try {
      sent += await sendDeltas(remote, deltas, signal);
      for (const delta of deltas) whole.delete(delta.object.hash as ContentHash);
    } catch (error) {
      // The old version's content is not the server project's after all: send them whole.
      if (!(error instanceof RemoteError && error.code === 'CONTENT_NOT_AVAILABLE')) throw error;
    }
  }
  return sent + (await uploadMissing(remote, store, whole, signal));
}

const READ_BYTES = 1024 * 1024;

/**
 * The assembled bytes read straight from where the store keeps the shards (spans of its pack files),
 * without hashing them on the way: the server cuts them and checks every shard and the whole against
 * the manifest. Reading through the store's verifying reader cost the daemon as much CPU as the
 * upload itself.
 */
function rawAssembled(store: ContentStore, manifest: DatasetManifest): Readable {
  async function* bytes(): AsyncGenerator<Buffer> {
    let handle: FileHandle | null = null;
    let file: string | null = null;
    try {
      for (const shard of manifest.shards) {
        const span = await store.objectSpan!(shard.hash);
        if (span === null) {
          yield* (await store.open(shard.hash)) as AsyncIterable<Buffer>;
          continue;
        }
        if (span.file !== file || handle === null) {
          await handle?.close();
          handle = null;
          handle = await open(span.file, 'r');
          file = span.file;
        }
        const reader: FileHandle = handle;
        for (let at = 0; at < span.size; ) {
          const wanted = Math.min(READ_BYTES, span.size - at);
          const buffer = Buffer.allocUnsafe(wanted);
          const { bytesRead } = await reader.read(buffer, 0, wanted, span.offset + at);
          if (bytesRead === 0) throw new Error(`shard ${shard.hash} ends early in ${span.file}`);
          at += bytesRead;
          yield buffer.subarray(0, bytesRead);
        }
      }
    } finally {
      await handle?.close();
    }
  }
  // Read ahead (see engine/datasets/read-dataset.ts): the request's socket finds megabytes ready.
  return Readable.from(bytes(), { objectMode: false, highWaterMark: 8 * READ_BYTES });
}

async function oldManifest(store: ContentStore, hash: ContentHash | null): Promise<Old | null> {
  if (hash === null || !(await store.has(hash))) return null;
  const bytes = await store.readBuffer(hash);
  return { hash, bytes, manifest: parseManifest(bytes, hash) };
}

interface Delta {
  object: ComposedObject;
  literal: Buffer[];
}

/** Deltas worth sending for the objects to send (shards, and the manifest), against the old version. */
async function deltasAgainst(store: ContentStore, old: Old, now: Old, toSend: Map<ContentHash, number>): Promise<Delta[]> {
  const deltas: Delta[] = [];
  const manifestParts = deltaParts(now.bytes, old.bytes, MANIFEST_BLOCK);
  if (toSend.has(now.hash) && literalBytes(manifestParts) <= now.bytes.length * DELTA_WORTH) {
    deltas.push(toDelta(now.hash, now.bytes, manifestParts, [{ at: 0, hash: old.hash, offset: 0, length: old.bytes.length }]));
  }
  const oldIndex = new ShardIndex(old.manifest);
  const shift = now.manifest.size - old.manifest.size;
  const cache = new Map<ContentHash, Buffer>();
  const shardBytes = async (hash: ContentHash) => {
    let found = cache.get(hash);
    if (found === undefined) {
      found = await store.readBuffer(hash);
      cache.set(hash, found);
    }
    return found;
  };
  let offset = 0;
  const done = new Set<ContentHash>();
  for (const shard of now.manifest.shards) {
    const start = offset;
    offset += shard.size;
    if (!toSend.has(shard.hash) || done.has(shard.hash) || old.manifest.size === 0) continue;
    done.add(shard.hash);
    // The old bytes at the same place, and where they would be after the size change (an insertion or
    // a deletion before this shard shifts everything after it).
    const windows = mergeRanges(
      [
        [start - WINDOW_SLACK, start + shard.size + WINDOW_SLACK],
        [start - shift - WINDOW_SLACK, start - shift + shard.size + WINDOW_SLACK],
      ].map(([from, to]) => [Math.max(0, from!), Math.min(old.manifest.size - 1, to!)] as [number, number]),
    );
    const segments: Segment[] = [];
    const pieces: Buffer[] = [];
    let at = 0;
    for (const [from, to] of windows) {
      for (const piece of oldIndex.pieces(from, to)) {
        const bytes = (await shardBytes(piece.hash)).subarray(piece.from, piece.to + 1);
        segments.push({ at, hash: piece.hash, offset: piece.from, length: bytes.length });
        pieces.push(bytes);
        at += bytes.length;
      }
    }
    const target = await store.readBuffer(shard.hash);
    const parts = deltaParts(target, Buffer.concat(pieces), SHARD_BLOCK);
    if (literalBytes(parts) <= target.length * DELTA_WORTH) deltas.push(toDelta(shard.hash, target, parts, segments));
  }
  return deltas;
}

/** Where the bytes of a delta's source came from: [at, at + length) of it is `hash` from `offset`. */
interface Segment {
  at: number;
  hash: ContentHash;
  offset: number;
  length: number;
}

function toDelta(hash: ContentHash, target: Buffer, parts: DeltaPart[], segments: Segment[]): Delta {
  const out: ComposedObject['parts'] = [];
  const literal: Buffer[] = [];
  for (const part of parts) {
    if ('literal' in part) {
      out.push({ literal: part.literal.length });
      literal.push(target.subarray(part.literal.offset, part.literal.offset + part.literal.length));
      continue;
    }
    // A copy may span several old shards: one part per shard it touches.
    let from = part.copy.offset;
    const end = part.copy.offset + part.copy.length;
    for (const segment of segments) {
      if (from >= end) break;
      const segmentEnd = segment.at + segment.length;
      if (from < segment.at || from >= segmentEnd) continue;
      const length = Math.min(end, segmentEnd) - from;
      out.push({ from: segment.hash, offset: segment.offset + (from - segment.at), length });
      from += length;
    }
  }
  return { object: { hash, parts: out }, literal };
}

async function sendDeltas(remote: Remote, deltas: Delta[], signal: AbortSignal): Promise<number> {
  let sent = 0;
  for (let i = 0; i < deltas.length; ) {
    const batch: Delta[] = [];
    let bytes = 0;
    while (i < deltas.length && batch.length < COMPOSE_OBJECTS && (batch.length === 0 || bytes + size(deltas[i]!) <= COMPOSE_LITERAL_BYTES)) {
      bytes += size(deltas[i]!);
      batch.push(deltas[i++]!);
    }
    sent += await remote.compose(
      batch.map((delta) => delta.object),
      batch.flatMap((delta) => delta.literal),
      signal,
    );
  }
  return sent;
}

function size(delta: Delta): number {
  return delta.literal.reduce((sum, piece) => sum + piece.length, 0);
}

function mergeRanges(ranges: Array<[number, number]>): Array<[number, number]> {
  const sorted = ranges.filter(([from, to]) => from <= to).sort((a, b) => a[0] - b[0]);
  const merged: Array<[number, number]> = [];
  for (const range of sorted) {
    const last = merged.at(-1);
    if (last !== undefined && range[0] <= last[1] + 1) last[1] = Math.max(last[1], range[1]);
    else merged.push([...range]);
  }
  return merged;
}
