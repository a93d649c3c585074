import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashBuffer } from '../engine/hash.js';
import { runCli, type ServerProcess, startServerProcess } from './helpers/server-process.js';
import { tempDir } from './helpers/world.js';

interface Acked {
  versionId: string;
  path: string;
  contentHash: string;
}

/**
 * kill -9 the server during a write storm, restart it: every acknowledged version is there with its
 * exact content, and fsck finds nothing missing or corrupt. Three rounds on the same home. One writer
 * stores datasets, so the shard packs (written by a chunking thread, fsynced, renamed, then indexed)
 * are in the storm too.
 */
describe('crash safety', () => {
  let home: { path: string; cleanup: () => Promise<void> };
  let apiKey: string;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    home = await tempDir('strata-crash-');
    const boot = await runCli(['admin', 'bootstrap', '--home', home.path, '--json']);
    expect(boot.code, boot.stderr).toBe(0);
    apiKey = (JSON.parse(boot.stdout) as { apiKey: string }).apiKey;
  });
  afterAll(async () => {
    await server?.stop();
    await home.cleanup();
  });

  it('loses no acknowledged version across three kill -9 during a write storm', async () => {
    const acked: Acked[] = [];
    let projectId = '';
    for (let round = 0; round < 3; round++) {
      server = await startServerProcess(home.path);
      const headers = { authorization: `Bearer ${apiKey}` };
      if (round === 0) {
        const created = await fetch(`${server.url}/v1/projects`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'storm' }) });
        expect(created.status).toBe(201);
        projectId = ((await created.json()) as { projectId: string }).projectId;
        // ds/ files are datasets: their shards go through the chunking thread into pack files
        const tracked = await fetch(`${server.url}/v1/projects/${projectId}/fs/datasets/track`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ pattern: 'ds/*' }),
        });
        expect(tracked.status).toBe(200);
      }
      // Everything acknowledged in earlier rounds survived the crash.
      await verifyAll(server.url, headers, projectId, acked);

      const url = server.url;
      let stop = false;
      const worker = async (w: number) => {
        for (let i = 0; !stop; i++) {
          // mostly small files (packed objects), sometimes a large one (a loose object); worker 0
          // writes datasets of 1.5–3 MiB (shards in a pack, tail in the SQLite pack)
          const dataset = w === 0;
          const body = randomBytes(dataset ? 1_500_000 + ((i * 7919) % 1_500_000) : i % 17 === 0 ? 200_000 + w : 512 + ((i * 131) % 4000));
          const path = dataset ? `ds/d${i % 5}.bin` : `w${w}/f${i % 40}.bin`;
          try {
            const res = await fetch(`${url}/v1/projects/${projectId}/fs/write?path=${encodeURIComponent(path)}`, { method: 'PUT', headers, body });
            if (res.status !== 201) continue;
            const { version } = (await res.json()) as { version: Acked & { dataset: boolean } };
            expect(version.dataset).toBe(dataset);
            // a dataset's version names its manifest; what it reads back is checked against the bytes
            if (!dataset) expect(version.contentHash).toBe(hashBuffer(body));
            acked.push({ versionId: version.versionId, path, contentHash: hashBuffer(body) });
          } catch {
            return; // the server died under us: whatever was not acknowledged may be lost
          }
        }
      };
      const workers = Array.from({ length: 8 }, (_, w) => worker(w));
      await new Promise((r) => setTimeout(r, 1200 + round * 300));
      await server.crash();
      stop = true;
      await Promise.all(workers);
      server = undefined;

      const fsck = await runCli(['fsck', '--home', home.path, '--json']);
      expect(fsck.code, fsck.stdout + fsck.stderr).toBe(0);
      expect(JSON.parse(fsck.stdout)).toMatchObject({ ok: true, missing: [], corrupt: [] });
    }
    expect(acked.length).toBeGreaterThan(100);
    expect(acked.filter((a) => a.path.startsWith('ds/')).length).toBeGreaterThan(3);
    server = await startServerProcess(home.path);
    await verifyAll(server.url, { authorization: `Bearer ${apiKey}` }, projectId, acked);
  });
});

async function verifyAll(url: string, headers: Record<string, string>, projectId: string, acked: Acked[]): Promise<void> {
  for (const a of acked) {
    const res = await fetch(`${url}/v1/projects/${projectId}/fs/read?versionId=${a.versionId}`, { headers });
    expect(res.status, `version ${a.versionId} of ${a.path}`).toBe(200);
    expect(hashBuffer(new Uint8Array(await res.arrayBuffer()))).toBe(a.contentHash);
  }
}
