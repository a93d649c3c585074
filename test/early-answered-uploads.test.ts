// The CLI's HTTP client and the daemon's sync finish an upload the server answered early: a server knows a body is
// complete after Content-Length bytes, and may answer before the client's stream has seen its own end.
// Unpiping then left the request unended and its socket holding the process open until the server's
// keep-alive timeout (`strata put` printing its result and exiting a minute later, under load).

import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createClient } from '../cli/client.js';
import { Remote } from '../daemon/sync/remote.js';

/** A server that answers 200 as soon as `expected` bytes arrived; records whether the request then ended. */
async function earlyAnswering(expected: number): Promise<{ url: string; ended(): boolean; close(): void }> {
  let requestEnded = false;
  const server = createServer((request, response) => {
    let received = 0;
    request.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received === expected) response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    request.on('end', () => {
      requestEnded = true;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    ended: () => requestEnded,
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** Five bytes at once, then the end of the stream a little later (a file stream's last, empty read). */
function lateEnding(): Readable {
  let sent = false;
  return new Readable({
    read() {
      if (sent) return;
      sent = true;
      this.push(Buffer.from('hello'));
      setTimeout(() => this.push(null), 300);
    },
  });
}

async function finished(body: Readable, ended: () => boolean): Promise<void> {
  await Promise.race([once(body, 'end'), new Promise((_, reject) => setTimeout(() => reject(new Error('the upload stream never ended')), 10_000))]);
  const deadline = Date.now() + 10_000;
  while (!ended() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(ended()).toBe(true);
}

describe('uploads answered early', () => {
  it("the daemon's sync upload finishes its stream and request too", async () => {
    const server = await earlyAnswering(5);
    try {
      const body = lateEnding();
      const remote = new Remote({ serverUrl: server.url, remoteProjectId: 'p', apiKey: 'rk.test.x.y' });
      await remote.upload(`blake3:${'0'.repeat(64)}`, 5, body);
      await finished(body, server.ended);
    } finally {
      server.close();
    }
  });

  it("the CLI's upload finishes its stream and request after a success that arrived first", async () => {
    const server = await earlyAnswering(5);
    try {
      const body = lateEnding();
      const client = createClient({ serverUrl: server.url, apiKey: 'rk.test.x.y', version: 'test' });
      expect(await client.json('PUT', '/upload', { body, headers: { 'content-length': '5' } })).toStrictEqual({ ok: true });
      // The stream is read to its end (not left paused), and the server sees the request end.
      await finished(body, server.ended);
    } finally {
      server.close();
    }
  });
});
