// A server on Postgres and S3 stages a dataset sent whole (PUT sync/datasets) in a scratch pack under
// its home's tmp/ before it stores the shards in the bucket. Killed (-9) while one streamed in, it left
// that pack behind — up to the dataset's size, once per crash — and neither a restart nor `strata gc`
// ever removed it. The next start removes the scratch of a process that is gone.

import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CHUNKER_PARAMS } from '../engine/datasets/chunker-params.js';
import { encodeManifest, MANIFEST_FORMAT } from '../engine/datasets/manifest.js';
import { hashBuffer } from '../engine/hash.js';
import { chunkFile } from '../engine/storage/chunk-file.js';
import { baseEnv, parseJson, runCli, tempDir } from './cli-harness.js';
import { createTestSchema, type TestSchema } from './helpers/postgres.js';
import { startS3Server, type TestS3Server } from './helpers/s3-server.js';
import { type ServerProcess, startServerProcess } from './helpers/server-process.js';

const MIB = 1024 * 1024;

let dir: { path: string; remove(): Promise<void> };
let schema: TestSchema;
let s3: TestS3Server;
let env: NodeJS.ProcessEnv;
let server: ServerProcess | undefined;

beforeAll(async () => {
  dir = await tempDir('strata-s3-scratch-');
  schema = await createTestSchema('strata_scr');
  s3 = await startS3Server();
  env = {
    ...baseEnv(join(dir.path, 'config')),
    STRATA_DATABASE_URL: schema.url,
    STRATA_OBJECTS_URL: s3.url,
    AWS_ACCESS_KEY_ID: s3.accessKeyId,
    AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    STRATA_PEPPER: randomBytes(32).toString('hex'),
    STRATA_RATE_LIMIT: 'off',
  };
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await s3?.close();
  await schema?.drop();
  await dir?.remove();
}, 60_000);

/** Staged packs under the home's tmp/, with their sizes. */
async function stagedPacks(home: string): Promise<Array<{ path: string; size: number }>> {
  const found: Array<{ path: string; size: number }> = [];
  const root = join(home, 'tmp');
  for (const name of await readdir(root).catch(() => [] as string[])) {
    for (const file of await readdir(join(root, name)).catch(() => [] as string[])) {
      if (file.endsWith('.pack')) found.push({ path: join(root, name, file), size: (await stat(join(root, name, file))).size });
    }
  }
  return found;
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('a server on S3 killed while a dataset streams in', () => {
  it('leaves no staged pack behind once it is started again', async () => {
    const home = join(dir.path, 'home');
    const boot = await runCli(['admin', 'bootstrap', '--home', home, '--json'], env);
    expect(boot.code, boot.stderr).toBe(0);
    const apiKey = parseJson<{ apiKey: string }>(boot).apiKey;
    server = await startServerProcess(home, env);
    const created = await runCli(['project', 'create', 'lab', '--json'], { ...env, STRATA_SERVER_URL: server.url, STRATA_API_KEY: apiKey });
    expect(created.code, created.stderr).toBe(0);
    const projectId = parseJson<{ projectId: string }>(created).projectId;

    // A 24 MiB dataset: its manifest goes up first, as the daemon sends it.
    const bytes = randomBytes(24 * MIB);
    const work = await mkdtemp(join(tmpdir(), 'strata-s3-scratch-file-'));
    let manifest: Buffer;
    try {
      await writeFile(join(work, 'run.bin'), bytes);
      const cut = await chunkFile(join(work, 'run.bin'), DEFAULT_CHUNKER_PARAMS);
      manifest = encodeManifest({ format: MANIFEST_FORMAT, chunker: DEFAULT_CHUNKER_PARAMS, size: cut.size, hash: cut.hash, shards: cut.chunks.map((c) => ({ hash: c.hash, size: c.size })) });
    } finally {
      await rm(work, { recursive: true, force: true });
    }
    const manifestHash = hashBuffer(manifest);
    const base = `${server.url}/v1/projects/${projectId}`;
    const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/octet-stream' };
    const sent = await fetch(`${base}/sync/objects`, { method: 'POST', headers, body: Buffer.concat([Buffer.from(`${manifestHash} ${manifest.length}\n`), manifest]) });
    expect(sent.status, await sent.text()).toBeLessThan(300);

    // The bytes start streaming in, then the sender pauses: the server is staging them.
    const upload = request(`${base}/sync/datasets/${manifestHash}`, { method: 'PUT', headers: { ...headers, 'content-length': String(bytes.length) } });
    upload.on('error', () => {}); // the server dies under it
    upload.write(bytes.subarray(0, 12 * MIB));
    const staged = await waitFor('a staged pack', async () => {
      const packs = await stagedPacks(home);
      return packs.some((p) => p.size >= 4 * MIB) ? packs : undefined;
    });
    await server.crash();
    upload.destroy();
    expect((await stagedPacks(home)).map((p) => p.path)).toEqual(staged.map((p) => p.path));

    // Started again (it listens only once its stores are open): the dead process's scratch is gone.
    server = await startServerProcess(home, env);
    expect(await stagedPacks(home)).toEqual([]);
    const left = await readdir(join(home, 'tmp'));
    for (const path of staged) expect(left).not.toContain(path.path.split('/').at(-2));
  }, 120_000);
});
