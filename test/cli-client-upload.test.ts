// The CLI's HTTP client finishes an upload the server answered early: a server knows a body is
// complete after Content-Length bytes, and may answer before the client's stream has seen its own end.
// Unpiping then left the request unended and its socket holding the process open until the server's
// keep-alive timeout (`strata put` printing its result and exiting a minute later, under load).

import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createClient } from '../cli/client.js';

describe('CLI upload', () => {
  it('a success that arrives before the body stream ended still lets the stream and the request finish', async () => {
    let requestEnded = false;
    const server = createServer((request, response) => {
      let received = 0;
      request.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received === 5) response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
      request.on('end', () => {
        requestEnded = true;
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      // Five bytes at once, then the end of the stream a little later (a file stream's last, empty read).
      let sent = false;
      const body = new Readable({
        read() {
          if (sent) return;
          sent = true;
          this.push(Buffer.from('hello'));
          setTimeout(() => this.push(null), 300);
        },
      });
      const client = createClient({ serverUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: 'rk.test.x.y', version: 'test' });
      expect(await client.json('PUT', '/upload', { body, headers: { 'content-length': '5' } })).toStrictEqual({ ok: true });
      // The stream is read to its end (not left paused), and the server sees the request end.
      await Promise.race([once(body, 'end'), new Promise((_, reject) => setTimeout(() => reject(new Error('the upload stream never ended')), 10_000))]);
      const deadline = Date.now() + 10_000;
      while (!requestEnded && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(requestEnded).toBe(true);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
