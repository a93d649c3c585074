// An S3 endpoint that accepts connections and never answers: opening the store fails within its
// bound, and a call to a bucket that stops answering after the open fails instead of hanging, with
// STORAGE_ERROR naming the bucket and endpoint, never the secret. A slow but live transfer is not cut.

import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { hashBuffer } from '../engine/hash.js';
import { openS3ContentStore } from '../engine/storage/s3-content-store.js';
import { expectStrataError } from './conformance/content-store-fixtures.js';

const SECRET = 'n0t-for-any-message-timeouts-0123456789';

/** An HTTP server on 127.0.0.1 whose handler decides which requests get an answer. */
async function endpoint(handler: (request: IncomingMessage, response: ServerResponse) => void): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer(handler);
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The bucket itself (HeadBucket, path style): /hung or /hung/, not a key under it. */
const isBucket = (url: string | undefined) => /^\/hung\/?(\?.*)?$/.test(url ?? '');

const options = (url: string) => ({ bucket: 'hung', endpoint: url, region: 'us-east-1', accessKeyId: 'AKIDEXAMPLE', secretAccessKey: SECRET });

describe('s3 content store against a bucket that does not answer', () => {
  it('open fails within openTimeoutMs, naming bucket and endpoint', async () => {
    const silent = await endpoint(() => {}); // never answers
    try {
      const started = Date.now();
      const error = await expectStrataError(openS3ContentStore({ ...options(silent.url), openTimeoutMs: 500 }), 'STORAGE_ERROR', /no answer within 0\.5 s/);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(error.message).toBe(`S3 HeadBucket failed for bucket "hung" at ${silent.url}: no answer within 0.5 s`);
      expect(JSON.stringify(error.details)).not.toContain(SECRET);
    } finally {
      await silent.close();
    }
  });

  it('a call to a bucket that stops answering after the open fails after idleTimeoutMs instead of hanging', async () => {
    // HeadBucket (HEAD /hung) answers; everything else (HeadObject, the open's sweep) never does.
    const halfDead = await endpoint((request, response) => {
      if (request.method === 'HEAD' && isBucket(request.url)) response.writeHead(200).end();
    });
    const store = await openS3ContentStore({ ...options(halfDead.url), idleTimeoutMs: 300 });
    try {
      const started = Date.now();
      const error = await expectStrataError(store.stat(hashBuffer(Buffer.from('x'))), 'STORAGE_ERROR', /TimeoutError/);
      // three attempts of 300 ms each, and the SDK's back-off between them
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(error.message).toContain(`"hung" at ${halfDead.url}`);
      expect(error.message).not.toContain(SECRET);
    } finally {
      await store.close();
      await halfDead.close();
    }
  }, 20_000);

  it('a download that keeps coming is not cut by the idle limit, however long it takes; one that stalls is', async () => {
    // GetObject answers at once and sends the body in 15 pieces 100 ms apart (~1.5 s) with an idle
    // limit of 500 ms: a limit on the whole request would cut it, the idle limit does not.
    const data = Buffer.alloc(15 * 1000, 7);
    const hash = hashBuffer(data);
    let stallAfter = Number.POSITIVE_INFINITY;
    const slow = await endpoint((request, response) => {
      if (request.method === 'HEAD' && isBucket(request.url)) {
        response.writeHead(200).end();
        return;
      }
      if (request.method !== 'GET' || !request.url!.startsWith(`/hung/objects/${hash.slice(7, 9)}/`)) {
        response.writeHead(200, { 'content-type': 'application/xml' }).end('<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>');
        return;
      }
      response.writeHead(200, { 'content-length': String(data.length), 'content-type': 'application/octet-stream' });
      let piece = 0;
      const next = () => {
        if (piece >= stallAfter) return; // stalls: no more bytes, the connection left open
        response.write(data.subarray(piece * 1000, (piece + 1) * 1000));
        piece += 1;
        if (piece === 15) response.end();
        else setTimeout(next, 100);
      };
      next();
    });
    const store = await openS3ContentStore({ ...options(slow.url), idleTimeoutMs: 500 });
    try {
      const started = Date.now();
      expect((await store.readBuffer(hash)).equals(data)).toBe(true);
      expect(Date.now() - started).toBeGreaterThan(1_000);
      stallAfter = 3;
      await expectStrataError(store.readBuffer(hash), 'STORAGE_ERROR', /TimeoutError|timed out/);
    } finally {
      await store.close();
      await slow.close();
    }
  }, 30_000);
});
