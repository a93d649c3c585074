// Writing a dataset: shards into the store (only new ones), then the canonical manifest as an
// ordinary object. The version record points to the manifest; its commit lists the shards so they
// count as referenced (gc, fsck) while the manifest does.
import type { EngineContext } from '../context.js';
import { StrataError } from '../errors.js';
import type { DatasetIngest } from '../ports/content-store.js';
import type { ContentHash } from '../types.js';
import { DEFAULT_CHUNKER_PARAMS } from './chunker-params.js';
import { encodeManifest, MANIFEST_FORMAT } from './manifest.js';

export interface StoredDataset {
  manifestHash: ContentHash;
  size: number;
  /** distinct shard hashes, for the commit */
  shards: ContentHash[];
  newShards: number;
  newBytes: number;
}

function unsupported(): StrataError {
  return new StrataError('INTERNAL', { message: 'This content store cannot store datasets (no putDatasetFile)' });
}

/** Shards of a local file (removed afterwards when `consume`), then its manifest. */
export async function storeDatasetFile(ctx: EngineContext, file: string, options: { consume: boolean; maxBytes: number }): Promise<StoredDataset> {
  if (ctx.store.putDatasetFile === undefined) throw unsupported();
  const ingest = await ctx.store.putDatasetFile(file, DEFAULT_CHUNKER_PARAMS, { consume: options.consume, maxBytes: options.maxBytes });
  return storeDatasetIngest(ctx, ingest);
}

/**
 * An object already in the store becomes a dataset (a stream that turned out large, or a file that
 * was just tracked): its loose file is chunked in place; a packed (small) object is its own single
 * shard. The whole object stays until gc finds nothing referencing it.
 */
export async function storeDatasetFromObject(ctx: EngineContext, hash: ContentHash, size: number): Promise<StoredDataset> {
  if (ctx.store.putDatasetFile === undefined) throw unsupported();
  const file = ctx.store.objectFile === undefined ? null : await ctx.store.objectFile(hash);
  if (file === null) {
    const shards = size === 0 ? [] : [{ hash, size }];
    return storeDatasetIngest(ctx, { hash, size, shards, newShards: 0, newBytes: 0 });
  }
  return storeDatasetIngest(ctx, await ctx.store.putDatasetFile(file, DEFAULT_CHUNKER_PARAMS));
}

/** The manifest of shards already stored. */
export async function storeDatasetIngest(ctx: EngineContext, ingest: DatasetIngest): Promise<StoredDataset> {
  const manifest = encodeManifest({ format: MANIFEST_FORMAT, chunker: DEFAULT_CHUNKER_PARAMS, size: ingest.size, hash: ingest.hash, shards: ingest.shards });
  const stored = await ctx.store.putBuffer(manifest);
  return {
    manifestHash: stored.hash,
    size: ingest.size,
    shards: [...new Set(ingest.shards.map((s) => s.hash))],
    newShards: ingest.newShards,
    newBytes: ingest.newBytes,
  };
}
