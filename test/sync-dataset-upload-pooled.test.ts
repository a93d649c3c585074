// A dataset's first push reads the store's pack spans through a few reused buffers
// (engine/datasets/pump-dataset.ts) and hands each back once the request's socket has it: a new 1 MiB
// buffer per read made the daemon run a full collection of its heap every ~20 MiB sent (28 in a
// 500 MiB first sync, ~1 s of its CPU; docs/benchmarks.md). The server still gets every byte and checks
// every shard; a connection cut midway fails the push instead of leaving it waiting for its buffers.
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_CHUNKER_PARAMS } from '../engine/datasets/chunker-params.js';
import { encodeManifest, MANIFEST_FORMAT, parseManifest } from '../engine/datasets/manifest.js';
import { pumpPieces, spansOf } from '../engine/datasets/pump-dataset.js';
import type { ContentStore } from '../engine/engine-api.js';
import { createLocalContentStore } from '../engine/storage/local-content-store.js';
import type { ContentHash } from '../engine/types.js';
import { uploadDataset } from '../daemon/sync/dataset-upload.js';
import { Remote, RemoteError } from '../daemon/sync/remote.js';
import { runCli, startServerProcess } from './helpers/server-process.js';
import { bufferBytesAllocatedDuring } from './helpers/buffer-allocations.js';
import { tempDir } from './helpers/world.js';

const MIB = 1024 * 1024;
const SIZE = 48 * MIB;

describe("a dataset's first push through reused buffers", () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let store: ContentStore;
  let manifestHash: ContentHash;
  let shards: ContentHash[];

  beforeEach(async () => {
    dir = await tempDir('strata-upload-pooled-');
    const source = join(dir.path, 'big.bin');
    const file = await open(source, 'w');
    for (let i = 0; i < SIZE / MIB; i++) await file.write(randomBytes(MIB));
    await file.close();
    store = await createLocalContentStore({ root: join(dir.path, 'store') });
    const ingest = await store.putDatasetFile!(source, DEFAULT_CHUNKER_PARAMS);
    const manifest = encodeManifest({ format: MANIFEST_FORMAT, chunker: DEFAULT_CHUNKER_PARAMS, size: ingest.size, hash: ingest.hash, shards: ingest.shards });
    manifestHash = (await store.putBuffer(manifest)).hash;
    shards = [...new Set(ingest.shards.map((shard) => shard.hash))];
    expect(shards.length).toBeGreaterThan(10);
  }, 120_000);

  afterEach(async () => {
    await store.close();
    await dir.cleanup();
  });

  const upload = (remote: Remote, signal: AbortSignal) =>
    uploadDataset(
      remote,
      store,
      {
        manifestHash,
        baseManifestHash: null,
        openAssembled: () => Promise.reject(new Error('a store with pack spans is not read as a stream')),
        checkAll: false,
      },
      signal,
    );

  it('sends every shard to a real server, allocating a few buffers rather than one per read', async () => {
    const home = join(dir.path, 'server');
    const boot = await runCli(['admin', 'bootstrap', '--home', home, '--json']);
    expect(boot.code, boot.stderr).toBe(0);
    const apiKey = (JSON.parse(boot.stdout) as { apiKey: string }).apiKey;
    const server = await startServerProcess(home);
    try {
      const created = await runCli(['projects', 'create', 'p', '--json'], { STRATA_SERVER_URL: server.url, STRATA_API_KEY: apiKey });
      expect(created.code, created.stderr).toBe(0);
      const remote = new Remote({ serverUrl: server.url, remoteProjectId: (JSON.parse(created.stdout) as { projectId: string }).projectId, apiKey });
      expect(await remote.missing([manifestHash, ...shards])).toHaveLength(shards.length + 1);
      let sent = 0;
      const allocated = await bufferBytesAllocatedDuring(async () => {
        sent = await upload(remote, new AbortController().signal);
      });
      expect(sent).toBeGreaterThanOrEqual(SIZE);
      // The server took every shard (each checked against its hash as it was cut) and the manifest.
      expect(await remote.missing([manifestHash, ...shards])).toStrictEqual([]);
      // One new 1 MiB buffer per read allocated all 48 MiB; the pump's eight are 8 MiB.
      expect(allocated).toBeLessThan(16 * MIB);
    } finally {
      await server.stop();
    }
  }, 120_000);

  it('sends a shard the store keeps among its small objects (no span) from there, the rest through the reused buffers', async () => {
    // A file's last shard is often small enough for the store's object pack: that one shard sent the
    // whole dataset down the streaming path, a new 1 MiB buffer per read (the case above failed so
    // whenever the random content's last shard came out small).
    const manifest = parseManifest(await store.readBuffer(manifestHash), manifestHash);
    const pieces = manifest.shards.map((shard) => ({ hash: shard.hash, from: 0, to: shard.size - 1, whole: true }));
    const spans = (await spansOf(store, pieces))!;
    // The middle shards are large (the chunker's minimum): each has its span. The last one may be
    // small enough for the object pack already, as it is made to be here (the random content decides:
    // asserting a span for it too failed this test now and then).
    expect(spans.slice(1, -1).every((span) => span !== null)).toBe(true);
    spans[0] = null;
    spans[spans.length - 1] = null;
    const received = createHash('sha256');
    let bytes = 0;
    const allocated = await bufferBytesAllocatedDuring(() =>
      pumpPieces(store, pieces, spans, { write: (chunk, done) => { received.update(chunk); bytes += chunk.length; setImmediate(done); } }, new AbortController().signal),
    );
    expect(bytes).toBe(SIZE);
    expect(received.digest('hex')).toBe(createHash('sha256').update(await readFile(join(dir.path, 'big.bin'))).digest('hex'));
    // The pump's eight buffers and the two shards read whole, not a buffer per read.
    expect(allocated).toBeLessThan(8 * MIB + manifest.shards[0]!.size + manifest.shards.at(-1)!.size + MIB);
  }, 120_000);

  it('fails (to be retried) when the connection is cut midway, without waiting for its buffers', async () => {
    // A server that wants everything, then drops the dataset's connection after 4 MiB of its body.
    const server = createServer((request, response) => {
      if (request.method === 'PUT') {
        let received = 0;
        request.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received >= 4 * MIB) request.socket.destroy();
        });
        return;
      }
      const pieces: Buffer[] = [];
      request.on('data', (chunk: Buffer) => pieces.push(chunk));
      request.on('end', () => {
        const missing = request.url!.endsWith('/missing') ? (JSON.parse(Buffer.concat(pieces).toString()) as { hashes: string[] }).hashes : [];
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ missing }));
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const remote = new Remote({ serverUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, remoteProjectId: 'p', apiKey: 'rk.test.x.y' });
      const started = Date.now();
      const failure = await upload(remote, new AbortController().signal).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(RemoteError);
      expect((failure as RemoteError).kind).toBe('retry');
      expect(Date.now() - started).toBeLessThan(20_000);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  }, 60_000);
});
