// Upload of one 256 MiB file to an S3 server (s3rver in a child process, over loopback HTTP), in
// this process: the S3 content store against a plain @aws-sdk/lib-storage Upload of the same file to
// the same server, rounds interleaved so the machine's noise lands on every variant alike.
//   - store putFile: hash pass on a hash worker, then a multipart upload straight to the final key
//     (re-hashed while it goes), then a touch marker;
//   - store put(stream): unknown hash: multipart upload to tmp/, then CopyObject to the final key;
//   - store put(stream, expectedHash): straight to the final key (a sync upload);
//   - lib-storage Upload: the SDK's defaults (5 MiB parts, 4 at once), no hashing of ours.
// Every store variant writes to a fresh prefix, so nothing is deduplicated.
// Usage (after npm run build): node dist/bench/s3-upload.js   (BENCH_S3_MIB, BENCH_ROUNDS)
import { randomFillSync } from 'node:crypto';
import { closeSync, createReadStream, openSync, readSync, writeSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { ContentHash } from '../engine/types.js';
import { openS3ContentStore } from '../engine/storage/s3-content-store.js';
import { startS3Server } from '../test/helpers/s3-server.js';

const MiB = 1024 * 1024;

export interface S3UploadResult {
  variant: string;
  mbPerSecond: number[];
  median: number;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Read the file once (untimed) so every variant reads it from the page cache. */
function warm(file: string): void {
  const fd = openSync(file, 'r');
  const buffer = Buffer.allocUnsafe(MiB);
  while (readSync(fd, buffer) > 0);
  closeSync(fd);
}

export async function runS3UploadBench(options: { mib?: number; rounds?: number } = {}): Promise<S3UploadResult[]> {
  const bytes = (options.mib ?? Number(process.env['BENCH_S3_MIB'] ?? 256)) * MiB;
  const rounds = options.rounds ?? Number(process.env['BENCH_ROUNDS'] ?? 3);
  const dir = await mkdtemp(join(tmpdir(), 'strata-bench-s3-'));
  const file = join(dir, 'source.bin');
  const fd = openSync(file, 'w');
  const chunk = Buffer.allocUnsafe(MiB);
  for (let written = 0; written < bytes; written += MiB) writeSync(fd, randomFillSync(chunk));
  closeSync(fd);
  const server = await startS3Server();
  const credentials = { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey };
  const client = new S3Client({ endpoint: server.endpoint, region: server.region, forcePathStyle: true, credentials });
  let expected: ContentHash | undefined;
  let prefix = 0;
  const storeRun = async (put: (store: Awaited<ReturnType<typeof openS3ContentStore>>) => Promise<{ hash: ContentHash; size: number }>) => {
    const store = await openS3ContentStore({ bucket: server.bucket, endpoint: server.endpoint, region: server.region, ...credentials, prefix: `bench-${++prefix}/` });
    try {
      const result = await put(store);
      if (result.size !== bytes) throw new Error(`stored ${result.size} bytes, not ${bytes}`);
      expected ??= result.hash;
    } finally {
      await store.close();
    }
  };
  const variants: Array<[string, () => Promise<void>]> = [
    ['store putFile', () => storeRun((store) => store.putFile(file))],
    ['store put(stream)', () => storeRun((store) => store.put(createReadStream(file, { highWaterMark: MiB })))],
    ['store put(stream, expectedHash)', () => storeRun((store) => store.put(createReadStream(file, { highWaterMark: MiB }), expected === undefined ? {} : { expectedHash: expected }))],
    [
      'lib-storage Upload',
      async () => {
        const upload = new Upload({ client, params: { Bucket: server.bucket, Key: `plain-${++prefix}`, Body: createReadStream(file, { highWaterMark: MiB }) } });
        await upload.done();
      },
    ],
  ];
  const results = variants.map(([variant]) => ({ variant, mbPerSecond: [] as number[], median: 0 }));
  try {
    for (let round = 0; round < rounds; round += 1) {
      for (const [i, [, run]] of variants.entries()) {
        warm(file);
        const started = performance.now();
        await run();
        const seconds = (performance.now() - started) / 1000;
        results[i]!.mbPerSecond.push(bytes / 1e6 / seconds);
      }
    }
  } finally {
    client.destroy();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
  for (const result of results) result.median = median(result.mbPerSecond);
  return results;
}

export function printS3UploadResults(results: S3UploadResult[], mib: number): void {
  const plain = results.find((r) => r.variant === 'lib-storage Upload')!.median;
  console.log(`upload of ${mib} MiB to s3rver over loopback (MB/s per round; median; ratio to lib-storage)`);
  for (const r of results) {
    console.log(`${r.variant.padEnd(34)} ${r.mbPerSecond.map((v) => v.toFixed(0).padStart(5)).join(' ')}   median ${r.median.toFixed(1).padStart(6)}   ×${(r.median / plain).toFixed(2)}`);
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const mib = Number(process.env['BENCH_S3_MIB'] ?? 256);
  printS3UploadResults(await runS3UploadBench({ mib }), mib);
}
