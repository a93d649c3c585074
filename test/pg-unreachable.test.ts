import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { isStrataError } from '../engine/errors.js';
import { PgDatabase } from '../engine/storage/pg-db.js';
import { openPgRepository } from '../engine/storage/pg-repository.js';

// A database that stops answering (behind a TCP proxy, a hung host) or drops connections: the pg
// driver throws plain Errors without a code for these, which became INTERNAL after 10 s.

interface Listener {
  url: string;
  close: () => Promise<void>;
}

/** A real listener on loopback: `hang` accepts and never answers, `drop` accepts and closes at once. */
async function listen(behaviour: 'hang' | 'drop'): Promise<Listener> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    if (behaviour === 'drop') socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    // Credentials in the URL: the error must not repeat them.
    url: `postgres://strata:s3cret-pw@127.0.0.1:${address.port}/strata?schema=walk_hang`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const opened: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of opened.splice(0).reverse()) await close();
});

async function expectUnreachable(promise: Promise<unknown>, reason: string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isStrataError(error, 'STORAGE_ERROR'), String(error)).toBe(true);
  const message = (error as Error).message;
  expect(message).toBe(`The metadata database is unreachable: ${reason}`);
  expect(message).not.toContain('s3cret');
  expect(message).not.toContain('127.0.0.1');
}

describe('a metadata database that does not answer', () => {
  for (const [behaviour, reason] of [
    ['hang', 'timeout'],
    ['drop', 'connection lost'],
  ] as const) {
    it(`${behaviour}: every way in fails as STORAGE_ERROR "${reason}", not INTERNAL`, async () => {
      const listener = await listen(behaviour);
      opened.push(listener.close);
      const db = new PgDatabase({ url: listener.url, max: 2, connectTimeoutMs: 300 });
      opened.push(() => db.close());
      const started = Date.now();
      await expectUnreachable(db.query('SELECT 1'), reason);
      await expectUnreachable(
        db.tx((tx) => tx.query('SELECT 1')),
        reason,
      );
      await expectUnreachable(
        (async () => {
          for await (const row of db.stream('SELECT 1')) void row;
        })(),
        reason,
      );
      // What `strata serve` and the maintenance commands open first.
      await expectUnreachable(openPgRepository({ url: listener.url, max: 1, connectTimeoutMs: 300 }), reason);
      // The short timeout was the one used: the default 10 s would have taken 40 s here.
      expect(Date.now() - started).toBeLessThan(5_000);
    });
  }
});
