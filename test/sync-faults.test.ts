// Sync under a bad network and strict servers (issue 14), real processes on loopback: a proxy in this
// test stands between a workstation and `strata serve`, answers some requests 429 (Retry-After) and
// cuts others at random points — before the server sees them, or after it answered — and the result
// must still be both trees equal and every version on the server once. Then the access rules: a
// key the server refuses pauses sync (nothing lost, everything queued) until a good key is given; a
// viewer's workstation pulls but never pushes, and says so.
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson } from './cli-harness.js';
import { allInSync, openSyncWorld, type SyncWorld, treeOf, type Workstation, waitFor } from './sync-harness.js';

let world: SyncWorld;
let proxy: FaultyProxy;

interface FaultyProxy {
  url: string;
  /** share of requests answered 429, and share cut */
  faults: { tooMany: number; cut: number };
  counts: { requests: number; tooMany: number; cutBefore: number; cutAfter: number };
  close(): Promise<void>;
}

/** A deterministic pseudo-random sequence (the same faults every run). */
function seeded(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1_103_515_245 + 12_345) % 2 ** 31;
    return x / 2 ** 31;
  };
}

async function faultyProxy(target: string): Promise<FaultyProxy> {
  const random = seeded(42);
  const upstream = new URL(target);
  const counts = { requests: 0, tooMany: 0, cutBefore: 0, cutAfter: 0 };
  const state: FaultyProxy = { url: '', faults: { tooMany: 0, cut: 0 }, counts, close: async () => {} };
  const server = http.createServer((request, response) => {
    counts.requests++;
    const roll = random();
    if (roll < state.faults.tooMany) {
      counts.tooMany++;
      response.writeHead(429, { 'retry-after': '1', 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { code: 'RATE_LIMITED', message: 'Too many requests', requestId: 'proxy' } }));
      request.resume();
      return;
    }
    const cut = roll < state.faults.tooMany + state.faults.cut;
    const cutBefore = cut && random() < 0.5;
    if (cutBefore) {
      // Cut before the server sees it (mid-upload, for a PUT with a body).
      counts.cutBefore++;
      request.once('data', () => request.socket.destroy());
      request.once('end', () => request.socket.destroy());
      return;
    }
    const forward = http.request(
      { host: upstream.hostname, port: upstream.port, method: request.method, path: request.url, headers: request.headers },
      (answer) => {
        if (cut) {
          // The server did the work; the workstation never hears it did.
          counts.cutAfter++;
          answer.resume();
          answer.once('end', () => response.socket?.destroy());
          return;
        }
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    forward.on('error', () => response.socket?.destroy());
    request.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  state.url = `http://127.0.0.1:${address.port}`;
  state.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}

beforeAll(async () => {
  world = await openSyncWorld('strata-sync-faults-');
  proxy = await faultyProxy(world.url);
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  await world?.dispose();
}, 60_000);

describe('sync through faults', () => {
  let a: Workstation;
  let b: Workstation;

  it('429s and connections cut at random points: everything arrives, once', async () => {
    a = world.workstation('wsA');
    b = world.workstation('wsB');
    await a.start();
    await b.start();
    // A syncs through the faulty proxy, B straight to the server.
    expect((await a.cli(['init', a.dir, '--server', proxy.url, '--project', world.projectId])).code).toBe(0);
    expect((await b.cli(['clone', world.url, world.projectId, b.dir])).code).toBe(0);
    proxy.faults = { tooMany: 0.15, cut: 0.2 };
    for (let i = 0; i < 150; i++) await writeFile(join(a.dir, `f${i}.txt`), `file ${i}\n`);
    for (let i = 0; i < 150; i += 10) await writeFile(join(a.dir, `f${i}.txt`), `file ${i}, edited\n`);
    for (let i = 0; i < 20; i++) await writeFile(join(b.dir, `from-b-${i}.txt`), `b ${i}\n`);
    try {
      await waitFor('faults on every kind', () => (proxy.counts.tooMany > 3 && proxy.counts.cutBefore > 3 && proxy.counts.cutAfter > 3 ? true : undefined), 120_000);
    } catch (error) {
      throw new Error(`${(error as Error).message}: ${JSON.stringify(proxy.counts)}; A's daemon:\n${a.daemonLog().slice(-4000)}`);
    }
    proxy.faults = { tooMany: 0, cut: 0 };
    await allInSync([a, b]);
    const trees = await waitFor(
      'equal trees',
      async () => {
        const [ta, tb] = [await treeOf(a.dir), await treeOf(b.dir)];
        return JSON.stringify(ta) === JSON.stringify(tb) ? ta : undefined;
      },
      30_000,
    );
    expect(Object.keys(trees)).toHaveLength(170);
    expect(trees['f10.txt']).toBe('file 10, edited\n');
    // Exactly once in effect: the server's history of a file is A's, version for version.
    const ids = (result: { stdout: string }) => (JSON.parse(result.stdout) as { items: Array<{ versionId: string }> }).items.map((v) => v.versionId);
    for (const path of ['f10.txt', 'f11.txt']) {
      const onServer = ids(await world.serverCli(['history', path, '--project', world.projectId, '--json']));
      expect(onServer.length).toBeGreaterThan(0);
      expect(onServer).toEqual(ids(await a.cli(['history', path, '--json'], { cwd: a.dir })));
    }
  }, 300_000);

  it('a key the server refuses pauses sync with everything queued; a good key resumes it', async () => {
    const bad = `rk.dev.${'0'.repeat(26)}.${'x'.repeat(43)}`;
    const relink = await b.cli(['init', b.dir, '--server', world.url, '--project', world.projectId], { timeoutMs: 30_000 });
    expect(relink.code).toBe(0);
    // The server revokes nothing here: B is given a key that was never valid.
    const { saveServerKey } = await import('../daemon/sync/link.js');
    await saveServerKey(b.home, world.url, bad);
    await b.stop();
    await b.start();
    await writeFile(join(b.dir, 'while-paused.txt'), 'queued\n');
    const paused = await waitFor(
      'B to pause',
      async () => {
        const [project] = await b.syncStatus();
        return project!.sync.state === 'paused' && project!.sync.queue.versions >= 1 ? project! : undefined;
      },
      60_000,
    );
    expect(paused.sync.lastError?.message).toMatch(/refused the credential/);
    const status = await b.cli(['sync', 'status']);
    expect(status.stdout + status.stderr).not.toContain(bad);
    expect(status.stdout + status.stderr).not.toContain(world.apiKey);
    // 5, the README's code for a credential problem (it was 4, the code for a conflict).
    const wait = await b.cli(['sync', 'wait', '--timeout', '20']);
    expect(wait.code, wait.stderr).toBe(5);
    expect(wait.stderr).toMatch(/paused: the server refused the API key/);
    // A good key again: `strata init` with STRATA_API_KEY set keeps it and resumes.
    expect((await b.cli(['init', b.dir, '--server', world.url, '--project', world.projectId])).code).toBe(0);
    await allInSync([a, b]);
    await waitFor('the queued file on A', async () => ((await treeOf(a.dir))['while-paused.txt'] === 'queued\n' ? true : undefined), 30_000);
  }, 240_000);

  it("a viewer's workstation pulls but never pushes, and says so", async () => {
    const key = await world.serverCli(['keys', 'create', '--purpose', 'viewer workstation', '--role', 'viewer', '--json']);
    expect(key.code, key.stderr).toBe(0);
    const viewerKey = parseJson<{ apiKey: string }>(key).apiKey;
    const v = world.workstation('wsV');
    v.env['STRATA_API_KEY'] = viewerKey;
    await v.start();
    const viewerClone = await v.cli(['clone', world.url, world.projectId, v.dir]);
    expect(viewerClone.code, viewerClone.stderr).toBe(0);
    await waitFor('the project on the viewer', async () => ((await treeOf(v.dir))['f10.txt'] === 'file 10, edited\n' ? true : undefined), 60_000);
    await writeFile(join(v.dir, 'viewer-edit.txt'), 'not for the server\n');
    const readOnly = await waitFor(
      'the viewer to say read-only',
      async () => {
        const [project] = await v.syncStatus();
        return project!.sync.readOnly && project!.sync.queue.versions >= 1 ? project! : undefined;
      },
      60_000,
    );
    expect(readOnly.sync.state).not.toBe('paused');
    const status = await v.cli(['sync', 'status']);
    expect(status.stdout).toContain('read-only');
    // It still pulls.
    await writeFile(join(a.dir, 'after-viewer.txt'), 'for everyone\n');
    await waitFor('A’s new file on the viewer', async () => ((await treeOf(v.dir))['after-viewer.txt'] === 'for everyone\n' ? true : undefined), 60_000);
    const server = await world.serverCli(['ls', '--project', world.projectId, '--json']);
    expect(server.stdout).not.toContain('viewer-edit.txt');
  }, 240_000);
});
