// Moving contents for sync (issue 14): up, only what the server project lacks — small contents many
// to a request, a large one streamed on its own — and down, only what this store lacks, each verified
// against its hash as the store takes it, small ones many to a request too. At most four transfers at
// once; a failure fails the call once the others are done (the caller retries the whole page: what
// already arrived is not sent again).
import PQueue from 'p-queue';
import { type DatasetManifest, parseManifest } from '../../engine/datasets/manifest.js';
import { streamUntilError } from '../../engine/datasets/stream-until-error.js';
import type { ContentStore } from '../../engine/engine-api.js';
import type { DatasetIngest } from '../../engine/ports/content-store.js';
import { isNoRoom } from '../../engine/errors.js';
import type { SyncChange } from '../../engine/ports/metadata-repository.js';
import type { ContentHash } from '../../engine/types.js';
import type { Remote } from './remote.js';

const CONCURRENCY = 4;
/** Contents up to this size travel in batches of up to BATCH_BYTES (POST sync/objects). */
const SMALL_OBJECT_BYTES = 1024 * 1024;
const BATCH_BYTES = 4 * 1024 * 1024;
/** At most this many contents per batch download (the server's limit is 1,000). */
const BATCH_OBJECTS = 1000;
/** A dataset the other side lacks this share of (by bytes) travels whole, in one stream. */
export const WHOLE_DATASET_SHARE = 0.9;

export async function uploadMissing(remote: Remote, store: ContentStore, sizes: Map<ContentHash, number>, signal: AbortSignal): Promise<number> {
  let uploaded = 0;
  const hashes = [...sizes.keys()];
  const queue = new PQueue({ concurrency: CONCURRENCY });
  // Every upload settles before the records that need them are posted; the first failure fails the batch.
  const failures: unknown[] = [];
  const enqueue = (task: () => Promise<void>) => {
    queue
      .add(async () => {
        if (failures.length === 0) await task();
      })
      .catch((error: unknown) => failures.push(error));
  };
  for (let i = 0; i < hashes.length && failures.length === 0; i += 1000) {
    const missing = (await remote.missing(hashes.slice(i, i + 1000), signal)) as ContentHash[];
    // Small contents travel many to a request; a large one streams on its own.
    const batches = smallBatches(Number.POSITIVE_INFINITY, (taken) =>
      enqueue(async () => {
        const objects = await readAll(store, taken);
        await remote.uploadBatch(objects, signal);
        uploaded += objects.reduce((sum, o) => sum + o.data.length, 0);
      }),
    );
    for (const hash of missing) {
      const size = sizes.get(hash) ?? Number.POSITIVE_INFINITY;
      if (size <= SMALL_OBJECT_BYTES) {
        batches.add(hash, size);
        continue;
      }
      enqueue(async () => {
        const info = await store.stat(hash);
        if (info === null) throw new Error(`content ${hash} is missing from the local store (run strata fsck)`);
        const stream = await store.open(hash);
        try {
          await remote.upload(hash, info.size, stream, signal);
        } finally {
          stream.destroy();
        }
        uploaded += info.size;
      });
    }
    batches.flush();
  }
  await queue.onIdle();
  if (failures.length > 0) throw failures[0];
  return uploaded;
}

/**
 * Small contents grouped into requests of at most BATCH_BYTES and `maxObjects` each: `add` hands each
 * full batch to `send`, `flush` the last one.
 */
function smallBatches(maxObjects: number, send: (hashes: ContentHash[]) => void): { add(hash: ContentHash, size: number): void; flush(): void } {
  let batch: ContentHash[] = [];
  let batchBytes = 0;
  const flush = () => {
    const taken = batch;
    batch = [];
    batchBytes = 0;
    if (taken.length > 0) send(taken);
  };
  return {
    add(hash, size) {
      if (batchBytes + size > BATCH_BYTES || batch.length >= maxObjects) flush();
      batch.push(hash);
      batchBytes += size;
    },
    flush,
  };
}

/** Small contents to send, read once (off the event loop, past the store's caches, where it can). */
async function readAll(store: ContentStore, hashes: ContentHash[]): Promise<Array<{ hash: ContentHash; data: Buffer }>> {
  if (store.readBuffers === undefined) return Promise.all(hashes.map(async (hash) => ({ hash, data: await store.readBuffer(hash) })));
  const found = await store.readBuffers(hashes, { once: true });
  return hashes.map((hash) => ({ hash, data: found.get(hash)! }));
}

/**
 * `bytes` and `objects` (contents, dataset manifests and shards) fetched from the server. `writesFiles`: the host writes the project's current files into a directory (watch mode), so a
 * current dataset's bytes are also kept as a copy for that file (DatasetStreamOptions.keepCopy).
 */
export async function downloadMissing(remote: Remote, store: ContentStore, items: SyncChange[], signal: AbortSignal, writesFiles = false): Promise<{ bytes: number; objects: number }> {
  let downloaded = 0;
  let objects = 0;
  const wanted = new Map<ContentHash, { versionId: string; size: number }>();
  const datasets = new Map<ContentHash, { versionId: string; keepCopy: boolean }>();
  const candidates = new Map<ContentHash, { versionId: string; size: number }>();
  for (const item of items) {
    if (item.contentHash === null || candidates.has(item.contentHash) || datasets.has(item.contentHash)) continue;
    if (item.dataset) datasets.set(item.contentHash, { versionId: item.versionId, keepCopy: writesFiles && item.current });
    else candidates.set(item.contentHash, { versionId: item.versionId, size: item.size });
  }
  // Asked all at once: one after another, a page of 500 new contents (each a failed stat of a loose
  // object) took 0.4-1 s of a clone's pull loop while the daemon wrote files (issue 38).
  const present = await Promise.all([...candidates.keys()].map((hash) => store.has(hash)));
  [...candidates].forEach(([hash, item], i) => {
    if (!present[i]) wanted.set(hash, item);
  });
  const queue = new PQueue({ concurrency: CONCURRENCY });
  // A failure does not stop the others (issue 38: two files that did not fit together were retried
  // together forever): what arrives is kept, and the retry of the page fetches only the rest.
  const failures: unknown[] = [];
  const run = (task: () => Promise<void>) => {
    queue
      .add(async () => {
        if (!signal.aborted) await task();
      })
      .catch((error: unknown) => failures.push(error));
  };
  // Small contents many to a request (issue 38: a clone of 5,000 files was 5,000 requests), up to
  // BATCH_BYTES each; a large one streams on its own, verified as the store takes it.
  const noRoomAgain: Array<() => Promise<void>> = [];
  const batches = smallBatches(BATCH_OBJECTS, (taken) =>
    run(async () => {
      const batchDone = await downloadBatch(remote, store, taken, signal);
      downloaded += batchDone.bytes;
      objects += batchDone.objects;
    }),
  );
  for (const [hash, { versionId, size }] of wanted) {
    if (size <= SMALL_OBJECT_BYTES) {
      batches.add(hash, size);
      continue;
    }
    const fetchOne = async () => {
      // The store hashes as it writes and keeps nothing that is not `hash`.
      const result = await store.put(await remote.read(versionId, signal), { expectedHash: hash });
      downloaded += result.size;
      objects++;
    };
    run(async () => {
      try {
        await fetchOne();
      } catch (error) {
        // Side by side they may not fit where one alone does: tried again one at a time below.
        if (!isNoRoom(error)) throw error;
        noRoomAgain.push(fetchOne);
      }
    });
  }
  batches.flush();
  await queue.onIdle();
  for (const fetchOne of noRoomAgain) {
    if (signal.aborted) break;
    await fetchOne().catch((error: unknown) => failures.push(error));
  }
  for (const [manifestHash, { versionId, keepCopy }] of datasets) {
    if (signal.aborted) break;
    try {
      const dataset = await downloadDataset(remote, store, manifestHash, versionId, signal, keepCopy);
      downloaded += dataset.bytes;
      objects += dataset.objects;
    } catch (error) {
      failures.push(error);
    }
  }
  if (failures.length > 0) throw failures[0];
  return { bytes: downloaded, objects };
}

/**
 * One batch of small contents: stored together (one durable commit), each checked against the hash it
 * was asked for. A batch that cannot be stored whole (a full disk) is stored one object at a time, so
 * what fits is kept and the retry asks only for the rest.
 */
async function downloadBatch(remote: Remote, store: ContentStore, hashes: ContentHash[], signal: AbortSignal): Promise<{ bytes: number; objects: number }> {
  const objects: Array<{ hash: string; data: Buffer }> = [];
  for await (const object of remote.readBatch(hashes, signal)) objects.push(object);
  let results: Awaited<ReturnType<ContentStore['putBuffers']>>;
  try {
    results = await store.putBuffers(objects.map((o) => o.data));
  } catch (error) {
    for (const object of objects) {
      // Each that fits is kept; the batch's own failure is the one reported.
      await store.putBuffer(object.data, { expectedHash: object.hash as ContentHash }).catch(() => undefined);
    }
    throw error;
  }
  const wrong = results.findIndex((result, i) => result.hash !== objects[i]!.hash);
  if (wrong !== -1) throw new Error(`the server sent bytes hashing to ${results[wrong]!.hash} as ${objects[wrong]!.hash}`);
  return { bytes: results.reduce((sum, result) => sum + result.size, 0), objects: results.length };
}

/**
 * A pulled dataset: its manifest, then the shards this store lacks. Most of it missing (a first pull):
 * the assembled bytes stream once into the store, cut by the manifest's own chunker parameters, which
 * makes the same shards in one pack file; the result must hash to the manifest's `hash` (and with
 * `keepCopy` the store may keep those bytes as the file they are about to become). A few missing
 * (an edit of a big file): only those shards travel, each fetched by hash and verified.
 */
async function downloadDataset(remote: Remote, store: ContentStore, manifestHash: ContentHash, versionId: string, signal: AbortSignal, keepCopy: boolean): Promise<{ bytes: number; objects: number }> {
  let downloaded = 0;
  let objects = 0;
  if (!(await store.has(manifestHash))) {
    downloaded += (await store.put(await remote.object(manifestHash, signal), { expectedHash: manifestHash })).size;
    objects++;
  }
  const manifest = parseManifest(await store.readBuffer(manifestHash), manifestHash);
  let missing = await absentShards(store, manifest);
  const missingBytes = missing.reduce((sum, shard) => sum + shard.size, 0);
  if (store.putDatasetStream !== undefined && missingBytes >= manifest.size * WHOLE_DATASET_SHARE) {
    const options = { expect: { hash: manifest.hash, shards: manifest.shards }, keepCopy };
    let ingest: DatasetIngest;
    if (store.putDatasetFetch !== undefined) {
      // Fetched by the store's chunking thread: 500 MiB of socket buffers on the event loop made the
      // daemon's heap run a full collection every few MiB (a third of its CPU in a clone).
      const { ingest: stored, fetched } = await store.putDatasetFetch(await remote.readSource(versionId, signal), manifest.chunker, options);
      if (stored !== null) {
        downloaded += stored.size;
        objects++;
      }
      if (signal.aborted) throw signal.reason;
      const failure = remote.fetchFailure(fetched);
      if (failure !== null) throw failure;
      ingest = stored!;
    } else {
      // Cut off midway, the shards that arrived whole are kept: the retry fetches only the rest.
      const stream = streamUntilError(await remote.read(versionId, signal));
      ingest = await store.putDatasetStream(stream.source, manifest.chunker, options);
      downloaded += ingest.size;
      objects++;
      if (stream.failure() !== undefined) throw stream.failure();
    }
    if (ingest.hash !== manifest.hash) throw new Error(`the bytes of dataset version ${versionId} hash to ${ingest.hash}, not ${manifest.hash}`);
    missing = await absentShards(store, manifest);
  }
  const queue = new PQueue({ concurrency: CONCURRENCY });
  const failures: unknown[] = [];
  for (const shard of missing) {
    queue
      .add(async () => {
        if (failures.length > 0) return;
        downloaded += (await store.put(await remote.object(shard.hash, signal), { expectedHash: shard.hash })).size;
        objects++;
      })
      .catch((error: unknown) => failures.push(error));
  }
  await queue.onIdle();
  if (failures.length > 0) throw failures[0];
  return { bytes: downloaded, objects };
}

async function absentShards(store: ContentStore, manifest: DatasetManifest): Promise<Array<{ hash: ContentHash; size: number }>> {
  const seen = new Set<ContentHash>();
  const absent: Array<{ hash: ContentHash; size: number }> = [];
  for (const shard of manifest.shards) {
    if (seen.has(shard.hash)) continue;
    seen.add(shard.hash);
    if (!(await store.has(shard.hash))) absent.push(shard);
  }
  return absent;
}

