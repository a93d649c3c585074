// store.putDatasetFetch: a pulled dataset's GET made by the store's chunking thread itself (the bytes
// never reach the event loop), against a real HTTP server on loopback. A whole body is the manifest,
// stored, and (keepCopy) kept as the file it becomes; a body cut midway keeps the shards that arrived
// whole; another answer than 2xx stores nothing; an abort cuts the fetch; remote.ts classifies each
// outcome as its own read() would have failed.
import { once } from 'node:events';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Remote, RemoteError } from '../daemon/sync/remote.js';
import { chunkerParams } from '../engine/datasets/chunker-params.js';
import type { ContentStore, FetchSource } from '../engine/ports/content-store.js';
import { createLocalContentStore } from '../engine/storage/local-content-store.js';
import type { ContentHash } from '../engine/types.js';
import { bytes } from './conformance/content-store-fixtures.js';

const PARAMS = chunkerParams({ minSize: 128 * 1024, avgSize: 256 * 1024, maxSize: 1024 * 1024 });

describe('local content store: putDatasetFetch', () => {
  let root: string;
  let store: ContentStore;
  let server: Server;
  let base: string;
  let handler: (request: IncomingMessage, response: ServerResponse) => void = () => undefined;
  const data = Buffer.concat([bytes(4 * 1024 * 1024, 71), bytes(4321, 72)]);
  let manifest: { hash: ContentHash; shards: Array<{ hash: ContentHash; size: number }> };

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-dataset-fetch-'));
    // The manifest as the other side cut it (another store).
    const other = await createLocalContentStore({ root: join(root, 'other') });
    try {
      await writeFile(join(root, 'src.bin'), data);
      const made = await other.putDatasetFile!(join(root, 'src.bin'), PARAMS);
      manifest = { hash: made.hash, shards: made.shards };
    } finally {
      await other.close();
    }
    server = createServer((request, response) => handler(request, response));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server?.closeAllConnections();
    server?.close();
    await rm(root, { recursive: true, force: true });
  });

  let storeDir: string;
  async function withStore(task: () => Promise<void>): Promise<void> {
    storeDir = await mkdtemp(join(root, 'store-'));
    store = await createLocalContentStore({ root: storeDir });
    try {
      await task();
    } finally {
      await store.close();
    }
  }
  const source = (signal?: AbortSignal): FetchSource => ({ url: `${base}/read`, headers: { authorization: 'Bearer k' }, timeoutMs: 10_000, ...(signal ? { signal } : {}) });
  const options = () => ({ expect: manifest, keepCopy: true });

  it('stores a whole body as the manifest, sends the headers given, and keeps the copy for the file', async () => {
    let authorization: string | undefined;
    handler = (request, response) => {
      authorization = request.headers.authorization;
      response.writeHead(200, { 'content-length': String(data.length) });
      // odd pieces, some larger than the thread's block
      for (let i = 0; i < data.length; i += 1_500_001) response.write(data.subarray(i, i + 1_500_001));
      response.end();
    };
    await withStore(async () => {
      const { ingest, fetched } = await store.putDatasetFetch!(source(), PARAMS, options());
      expect(fetched).toEqual({ kind: 'body', size: data.length, cut: null });
      expect(ingest?.hash).toBe(manifest.hash);
      expect(ingest?.shards).toEqual(manifest.shards);
      expect(authorization).toBe('Bearer k');
      for (const shard of manifest.shards) expect(await store.has(shard.hash)).toBe(true);
      const out = join(root, `out-${Date.now()}.bin`);
      expect(await store.writeObjectsTo!(manifest.shards, out, 0o644)).toBe(true);
      expect((await readFile(out)).equals(data)).toBe(true);
    });
  });

  it('a body cut midway keeps the shards that arrived whole, reports the cut, and keeps no copy', async () => {
    const upTo = manifest.shards[0]!.size + manifest.shards[1]!.size + 1000;
    handler = (_request, response) => {
      response.writeHead(200, { 'content-length': String(data.length) });
      response.write(data.subarray(0, upTo), () => setTimeout(() => response.socket?.destroy(), 50));
    };
    await withStore(async () => {
      const { ingest, fetched } = await store.putDatasetFetch!(source(), PARAMS, options());
      expect(fetched.kind === 'body' && fetched.cut !== null).toBe(true);
      expect(ingest?.hash).not.toBe(manifest.hash);
      expect(await store.has(manifest.shards[0]!.hash)).toBe(true);
      expect(await store.has(manifest.shards[1]!.hash)).toBe(true);
      expect(await store.has(manifest.shards[2]!.hash)).toBe(false);
      expect(await readdir(join(storeDir, 'tmp'))).toEqual([]);
      const failure = remote().fetchFailure(fetched);
      expect(failure).toBeInstanceOf(RemoteError);
      expect(failure?.kind).toBe('retry');
    });
  });

  it('another answer than 2xx stores nothing and is classified as read() would be', async () => {
    handler = (_request, response) => {
      response.writeHead(503, { 'retry-after': '7', 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { code: 'UNAVAILABLE', message: 'busy' } }));
    };
    await withStore(async () => {
      const { ingest, fetched } = await store.putDatasetFetch!(source(), PARAMS, options());
      expect(ingest).toBeNull();
      expect(fetched).toMatchObject({ kind: 'status', status: 503, retryAfter: '7' });
      expect(await store.has(manifest.shards[0]!.hash)).toBe(false);
      expect(await readdir(join(storeDir, 'tmp'))).toEqual([]);
      const failure = remote().fetchFailure(fetched)!;
      expect(failure.kind).toBe('retry');
      expect(failure.status).toBe(503);
      expect(failure.code).toBe('UNAVAILABLE');
      expect(failure.retryAfterMs).toBe(7000);
    });
  });

  it('an abort cuts a fetch that is under way', async () => {
    const controller = new AbortController();
    handler = (_request, response) => {
      response.writeHead(200, { 'content-length': String(data.length) });
      // half, then nothing: only the abort ends it
      response.write(data.subarray(0, data.length >> 1), () => controller.abort());
    };
    await withStore(async () => {
      const { fetched } = await store.putDatasetFetch!(source(controller.signal), PARAMS, options());
      expect(fetched.kind === 'body' && fetched.cut !== null).toBe(true);
      expect(await readdir(join(storeDir, 'tmp'))).toEqual([]);
    });
  });

  function remote(): Remote {
    return new Remote({ serverUrl: base, remoteProjectId: 'p', apiKey: 'k' });
  }
});
