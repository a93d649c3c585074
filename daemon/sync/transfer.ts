// Moving contents for sync (issue 14): up, only what the server project lacks — small contents many
// to a request, a large one streamed on its own — and down, only what this store lacks, each verified
// against its hash as the store takes it. At most four transfers at once; the first failure fails
// the call (the caller retries the whole page: what already arrived is not sent again).
import PQueue from 'p-queue';
import type { ContentStore } from '../../engine/engine-api.js';
import type { SyncChange } from '../../engine/ports/metadata-repository.js';
import type { ContentHash } from '../../engine/types.js';
import type { Remote } from './remote.js';

const CONCURRENCY = 4;
/** Contents up to this size travel in batches of up to BATCH_BYTES (POST sync/objects). */
const SMALL_OBJECT_BYTES = 1024 * 1024;
const BATCH_BYTES = 4 * 1024 * 1024;

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
    let batch: ContentHash[] = [];
    let batchBytes = 0;
    const flush = () => {
      const taken = batch;
      batch = [];
      batchBytes = 0;
      if (taken.length > 0) {
        enqueue(async () => {
          const objects = await Promise.all(taken.map(async (hash) => ({ hash, data: await store.readBuffer(hash) })));
          await remote.uploadBatch(objects, signal);
          uploaded += objects.reduce((sum, o) => sum + o.data.length, 0);
        });
      }
    };
    for (const hash of missing) {
      const size = sizes.get(hash) ?? Number.POSITIVE_INFINITY;
      if (size <= SMALL_OBJECT_BYTES) {
        if (batchBytes + size > BATCH_BYTES) flush();
        batch.push(hash);
        batchBytes += size;
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
    flush();
  }
  await queue.onIdle();
  if (failures.length > 0) throw failures[0];
  return uploaded;
}


export async function downloadMissing(remote: Remote, store: ContentStore, items: SyncChange[], signal: AbortSignal): Promise<number> {
  let downloaded = 0;
  const wanted = new Map<ContentHash, string>();
  for (const item of items) {
    if (item.contentHash === null || item.dataset || wanted.has(item.contentHash)) continue;
    if (!(await store.has(item.contentHash))) wanted.set(item.contentHash, item.versionId);
  }
  const queue = new PQueue({ concurrency: CONCURRENCY });
  const failures: unknown[] = [];
  for (const [hash, versionId] of wanted) {
    const download = queue.add(async () => {
      if (failures.length > 0) return;
      const body = await remote.read(versionId, signal);
      // The store hashes as it writes and keeps nothing that is not `hash`.
      const result = await store.put(body, { expectedHash: hash });
      downloaded += result.size;
    });
    download.catch((error: unknown) => failures.push(error));
  }
  await queue.onIdle();
  if (failures.length > 0) throw failures[0];
  return downloaded;
}

