// A page of the server's changes read before this workstation's push landed, and applied after
// (the sync model's defect 3, seed 3000, path 7; timing: its replay passed). Offline, B made `c/a`
// executable while A deleted it. B's push brought the file back on the server (an edit beats a
// delete), but B's pull had asked for the changes just before: the page said A's deletion was the
// server's current `c/a`. Applied once the push had moved B's push position past its own version,
// the page's deletion no longer waited for the push and was taken over B's own version, which came
// back in the feed as known: B had no `c/a` while the server had B's, and `sync wait` said in sync.
//
// A proxy between B and the server forces that interleaving every time: it holds B's push until
// the server has answered B's first read of the changes, and holds that answer until the push's
// answer has reached B and B counts it pushed.
import { chmod, mkdir, rm, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allInSync, openSyncWorld, type SyncWorld, treeOf, type Workstation, waitFor } from './sync-harness.js';

interface RaceProxy {
  url: string;
  /** from now on, the next read of changes with items and the next push are interleaved */
  arm(): void;
  /** the changes' answer is held and the push's answer has been delivered */
  readonly pushDelivered: Promise<void>;
  /** delivers the held changes' answer */
  release(): void;
  /** both were held: the interleaving happened (not a timeout's fallback) */
  readonly forced: boolean;
  close(): Promise<void>;
}

/** Every request passes through, but for the two the armed proxy holds. */
async function raceProxy(target: string): Promise<RaceProxy> {
  const upstream = new URL(target);
  let armed = false;
  let forced = false;
  let changesHeld: (() => void) | null = null;
  const changesBuffered = Promise.withResolvers<void>();
  const pushDelivered = Promise.withResolvers<void>();
  const released = Promise.withResolvers<void>();
  // Never a deadlock: a test whose interleaving did not happen fails on `forced`, not on a hang.
  const fallback = setTimeout(() => {
    changesBuffered.resolve();
    released.resolve();
  }, 60_000);
  const server = http.createServer((request, response) => {
    const changes = request.method === 'GET' && request.url?.includes('/sync/changes?') === true;
    const push = request.method === 'POST' && request.url?.endsWith('/sync/versions') === true;
    const holdPush = armed && push && changesHeld === null;
    const forward = () => {
      const out = http.request({ host: upstream.hostname, port: upstream.port, method: request.method, path: request.url, headers: request.headers }, (answer) => {
        if (!(armed && changes && changesHeld === null)) {
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(response);
          if (holdPush) response.once('finish', () => pushDelivered.resolve());
          return;
        }
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.once('end', () => {
          const body = Buffer.concat(chunks);
          const deliver = () => {
            response.writeHead(answer.statusCode ?? 502, answer.headers);
            response.end(body);
          };
          const items = (JSON.parse(body.toString('utf8')) as { items?: unknown[] }).items ?? [];
          if (changesHeld !== null || items.length === 0) return deliver();
          changesHeld = deliver;
          changesBuffered.resolve();
          void released.promise.then(deliver);
        });
      });
      out.on('error', () => response.socket?.destroy());
      request.pipe(out);
    };
    if (!holdPush) return forward();
    // The push goes to the server only once the server has answered the read of the changes.
    void changesBuffered.promise.then(() => {
      forced = changesHeld !== null;
      forward();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  return {
    url: `http://127.0.0.1:${address.port}`,
    arm: () => {
      armed = true;
    },
    pushDelivered: pushDelivered.promise,
    release: () => released.resolve(),
    get forced() {
      return forced;
    },
    close: () =>
      new Promise((resolve) => {
        clearTimeout(fallback);
        released.resolve();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let world: SyncWorld;
let proxy: RaceProxy;

beforeAll(async () => {
  world = await openSyncWorld('strata-sync-pull-race-');
  proxy = await raceProxy(world.url);
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  await world?.dispose();
}, 60_000);

describe('sync: a page read before the push landed', () => {
  it("does not take a deletion over this workstation's own edit that the push brought back on the server", async () => {
    const a: Workstation = world.workstation('wsA');
    const b: Workstation = world.workstation('wsB');
    await a.start();
    await b.start();
    await mkdir(a.dir, { recursive: true });
    // A few other files: the deletion is not a mass deletion for the incoming guard.
    for (const name of ['a', 'b', 'd', 'e']) await writeFile(join(a.dir, name), `${name}\n`);
    await writeFile(join(a.dir, 'c'), 'v4\n');
    expect((await a.cli(['init', a.dir, '--server', world.url, '--project', world.projectId])).code).toBe(0);
    // B reaches the server through the proxy.
    expect((await b.cli(['clone', proxy.url, world.projectId, b.dir])).code).toBe(0);
    await allInSync([a, b]);
    await b.stop();
    // Offline: B's edit (the executable bit), and A's deletion, on the server first.
    await chmod(join(b.dir, 'c'), 0o755);
    await rm(join(a.dir, 'c'));
    await allInSync([a]);
    proxy.arm();
    await b.start();
    await proxy.pushDelivered;
    // B has taken the push's answer (its push position moved on) before the page's answer arrives.
    await waitFor('B to count its push', async () => ((await b.syncStatus())[0]!.sync.pushed >= 1 ? true : undefined), 60_000);
    proxy.release();
    expect(proxy.forced).toBe(true);
    await allInSync([a, b]);
    // The server kept B's edit over A's deletion (A has it back); B kept it too.
    for (const ws of [a, b]) {
      expect((await treeOf(ws.dir))['c'], ws.name).toBe('v4\n');
      expect((await stat(join(ws.dir, 'c'))).mode & 0o111, ws.name).not.toBe(0);
    }
  }, 300_000);
});
