// A client that goes away in the middle of an upload (a workstation's daemon killed, a laptop closed,
// a network cut) is an everyday event for a team server, not a server failure: it is logged as such,
// without an error-level record and a stack trace that an operator's alerting would page on.

import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapHome } from '../server/bootstrap.js';
import { startServer } from '../server/serve.js';
import { waitFor } from './daemon-harness.js';
import { tempDir } from './helpers/world.js';

describe('a client that leaves mid-upload', () => {
  let home: { path: string; cleanup: () => Promise<void> };
  let server: { url: string; close(): Promise<void> };
  let apiKey: string;
  const lines: Array<{ level: number; msg: string; err?: unknown }> = [];

  beforeAll(async () => {
    home = await tempDir('strata-client-gone-');
    ({ apiKey } = await bootstrapHome({ home: home.path, environment: 'local' }));
    const stream = { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) };
    server = await startServer({ home: home.path, listen: '127.0.0.1:0', logger: { level: 'info', stream }, environment: 'local' });
  });
  afterAll(async () => {
    await server.close();
    await home.cleanup();
  });

  it('is logged at info, with no error record', async () => {
    const auth = { authorization: `Bearer ${apiKey}` };
    const created = await fetch(`${server.url}/v1/projects`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'runs' }) });
    const { projectId } = (await created.json()) as { projectId: string };
    const { port } = new URL(server.url);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(
      `PUT /v1/projects/${projectId}/fs/write?path=big.bin HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${apiKey}\r\n` +
        'content-type: application/octet-stream\r\ncontent-length: 8388608\r\n\r\n',
    );
    socket.write(Buffer.alloc(1 << 20, 7));
    await waitFor('the upload to reach the route', async () => (lines.some((l) => l.msg === 'incoming request' && JSON.stringify(l).includes('big.bin')) ? true : undefined), 10_000);
    socket.destroy();
    const ended = await waitFor('the request to end', async () => lines.find((l) => /client went away/.test(l.msg)), 10_000);
    expect(ended.level).toBe(30);
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
  });
});
