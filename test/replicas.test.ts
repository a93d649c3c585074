// Three `strata serve` processes over one Postgres schema and one S3 server on loopback, clients
// writing, snapshotting, pushing git streams and restoring through different replicas at once. What
// must be serial stays serial across processes: the snapshot chain is linear, a conditional write has
// one winner, a git push applies once, and kill -9 of a replica mid-upload loses no acknowledged
// version. Then fsck of the shared storage is clean and every acknowledged version reads back.

import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, parseJson, runCli, tempDir } from './cli-harness.js';
import { git } from './helpers/git.js';
import { createTestSchema, type TestSchema } from './helpers/postgres.js';
import { startS3Server, type TestS3Server } from './helpers/s3-server.js';
import { type ServerProcess, startServerProcess } from './helpers/server-process.js';

let dir: { path: string; remove(): Promise<void> };
let schema: TestSchema;
let s3: TestS3Server;
let env: NodeJS.ProcessEnv;
let apiKey = '';
const replicas: ServerProcess[] = [];

async function api(replica: number, projectId: string, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${replicas[replica]!.url}/v1/projects/${projectId}${path}`, { ...init, headers: { authorization: `Bearer ${apiKey}`, ...(init.headers ?? {}) } });
}
async function json<T>(response: Response): Promise<T> {
  const text = await response.text();
  if (!response.ok) throw new Error(`HTTP ${response.status}: ${text}`);
  return JSON.parse(text) as T;
}
const write = (replica: number, projectId: string, path: string, body: string | Uint8Array, base?: string | null) =>
  api(replica, projectId, `/fs/write?path=${encodeURIComponent(path)}${base === undefined ? '' : `&baseVersionId=${base ?? ''}`}`, {
    method: 'PUT',
    body,
    headers: { 'content-type': 'application/octet-stream' },
  });
async function createProject(name: string): Promise<string> {
  const created = await runCli(['project', 'create', name, '--json'], { ...env, STRATA_SERVER_URL: replicas[0]!.url, STRATA_API_KEY: apiKey });
  expect(created.code, created.stderr).toBe(0);
  return parseJson<{ projectId: string }>(created).projectId;
}

beforeAll(async () => {
  dir = await tempDir('strata-replicas-');
  schema = await createTestSchema('strata_rep');
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
  const boot = await runCli(['admin', 'bootstrap', '--home', join(dir.path, 'home-0'), '--json'], env);
  expect(boot.code, boot.stderr).toBe(0);
  apiKey = parseJson<{ apiKey: string }>(boot).apiKey;
  // Each replica has a home of its own (scratch only): nothing shared but Postgres and the bucket.
  const started = await Promise.all([0, 1, 2].map((n) => startServerProcess(join(dir.path, `home-${n}`), env)));
  replicas.push(...started);
}, 120_000);

afterAll(async () => {
  await Promise.all(replicas.map((replica) => replica.stop()));
  await s3?.close();
  await schema?.drop();
  await dir?.remove();
}, 60_000);

describe('three replicas over one Postgres and one bucket', () => {
  const acknowledged = new Map<string, { projectId: string; content: string }>();
  let projectId = '';

  it('concurrent writes through every replica are all kept; a conditional write has exactly one winner', async () => {
    projectId = await createProject('shared');
    const writes = Array.from({ length: 60 }, async (_, i) => {
      const content = `write ${i} ${randomBytes(4).toString('hex')}\n`;
      const result = await json<{ version: { versionId: string } }>(await write(i % 3, projectId, `dir/file-${i % 10}.txt`, content));
      acknowledged.set(result.version.versionId, { projectId, content });
    });
    await Promise.all(writes);
    expect(acknowledged.size).toBe(60);

    let base = (await json<{ version: { versionId: string } }>(await write(0, projectId, 'contested.txt', 'v0'))).version.versionId;
    for (let round = 1; round <= 5; round += 1) {
      const attempts = await Promise.all([0, 1, 2].map((replica) => write(replica, projectId, 'contested.txt', `round ${round} from ${replica}`, base)));
      const winners = attempts.filter((response) => response.status === 201);
      expect(winners).toHaveLength(1);
      for (const loser of attempts.filter((response) => response.status !== 201)) {
        expect(loser.status).toBe(409);
        expect(((await loser.json()) as { error: { code: string } }).error.code).toBe('STALE_BASE_VERSION');
      }
      base = ((await winners[0]!.json()) as { version: { versionId: string } }).version.versionId;
    }
    const entry = await json<{ versionId: string }>(await api(1, projectId, '/fs/stat?path=contested.txt'));
    expect(entry.versionId).toBe(base);
  }, 120_000);

  it('a file and a file below it written through two replicas at once: never both', async () => {
    const race = await createProject('file-or-directory');
    for (let i = 0; i < 12; i += 1) {
      const [file, below] = await Promise.all([write(i % 3, race, `r${i}`, 'a file'), write((i + 1) % 3, race, `r${i}/inner.txt`, 'below it')]);
      const landed = [file, below].filter((response) => response.status === 201);
      expect(landed, `round ${i}`).toHaveLength(1);
      const refused = file.status === 201 ? below : file;
      expect(refused.status).toBe(409);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toMatch(/^PATH_(EXISTS|IS_DIRECTORY)$/);
    }
    const files = await json<{ items: Array<{ path: string; type: string }> }>(await api(2, race, '/fs/dir?path='));
    expect(files.items).toHaveLength(12);
  }, 120_000);

  it('snapshots requested of different replicas at once form one linear chain', async () => {
    const requests = Array.from({ length: 12 }, (_, i) =>
      api(i % 3, projectId, '/fs/snapshots', { method: 'POST', body: JSON.stringify({ message: `s${i}` }), headers: { 'content-type': 'application/json' } }),
    );
    for (const response of await Promise.all(requests)) expect(response.status).toBe(201);
    const listed = await json<{ items: Array<{ snapshotId: string; parentId: string | null; seq: number }> }>(await api(2, projectId, '/fs/snapshots?limit=100'));
    const chain = [...listed.items].sort((a, b) => a.seq - b.seq);
    expect(chain.map((s) => s.seq)).toStrictEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    for (const [i, snapshot] of chain.entries()) expect(snapshot.parentId).toBe(i === 0 ? null : chain[i - 1]!.snapshotId);
  }, 60_000);

  it('a git push sent to every replica at once is applied once', async () => {
    const gitProject = await createProject('pushed');
    const repo = join(dir.path, 'repo');
    const gitEnv = dir.path;
    await mkdir(repo, { recursive: true });
    await git(repo, gitEnv, ['init', '-q', '-b', 'main']);
    for (let i = 1; i <= 3; i += 1) {
      await writeFile(join(repo, 'model.py'), `print(${i})\n`);
      await git(repo, gitEnv, ['add', '-A']);
      await git(repo, gitEnv, ['-c', 'user.name=Ada', '-c', 'user.email=ada@lab.example', 'commit', '-q', '-m', `commit ${i}`]);
    }
    const stream = await git(repo, gitEnv, ['fast-export', '--use-done-feature', '--show-original-ids', 'main']);
    const responses = await Promise.all(
      [0, 1, 2].map((replica) => api(replica, gitProject, '/fs/git/receive', { method: 'POST', body: stream, headers: { 'content-type': 'application/octet-stream' } })),
    );
    const bodies = await Promise.all(responses.map(async (response) => ({ status: response.status, body: (await response.json()) as { applied?: unknown[]; error?: { code: string } } })));
    const applied = bodies.filter((b) => b.status === 200 && (b.body.applied?.length ?? 0) > 0);
    expect(applied, JSON.stringify(bodies)).toHaveLength(1);
    expect(applied[0]!.body.applied).toHaveLength(3);
    for (const other of bodies.filter((b) => b !== applied[0])) {
      // Whenever it read the chain, it finds every commit there: a request that planned on the chain
      // before the winner's landed is refused by importChain's tip check and judged again.
      expect(other.status, JSON.stringify(other.body)).toBe(200);
      expect(other.body.applied).toStrictEqual([]);
    }
    const snapshots = await json<{ items: unknown[] }>(await api(1, gitProject, '/fs/snapshots'));
    expect(snapshots.items).toHaveLength(3);
  }, 120_000);

  it('restores through different replicas at once; each lands whole', async () => {
    const listed = await json<{ items: Array<{ snapshotId: string; seq: number }> }>(await api(0, projectId, '/fs/snapshots?limit=100'));
    const first = listed.items.find((s) => s.seq === 1)!;
    const history = await json<{ items: Array<{ versionId: string }> }>(await api(2, projectId, '/history?path=dir/file-0.txt'));
    const oldest = history.items[history.items.length - 1]!;
    const [restored, reverted] = await Promise.all([
      api(1, projectId, `/fs/snapshots/${first.snapshotId}/restore`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }),
      api(2, projectId, '/history/restore', { method: 'POST', body: JSON.stringify({ versionId: oldest.versionId }), headers: { 'content-type': 'application/json' } }),
    ]);
    expect([200, 201]).toContain(restored.status);
    expect([200, 201]).toContain(reverted.status);
    const diff = await json<{ items?: unknown[] }>(await api(0, projectId, `/fs/snapshots/${first.snapshotId}/diff`));
    // The snapshot restore made the tree equal to it; the version restore, if it came after, differs in one path.
    expect((diff.items ?? []).length).toBeLessThanOrEqual(1);
  }, 60_000);

  it('kill -9 of a replica mid-upload loses no acknowledged version; the others serve on', async () => {
    const victim = replicas[2]!;
    const small = Array.from({ length: 10 }, async (_, i) => {
      const content = `before the crash ${i}\n`;
      const result = await json<{ version: { versionId: string } }>(await write(2, projectId, `crash/${i}.txt`, content));
      acknowledged.set(result.version.versionId, { projectId, content });
    });
    await Promise.all(small);
    // A large upload that is still arriving when the replica dies: never acknowledged, and harmless.
    let sent = 0;
    let killed = false;
    let crashed: Promise<void> | undefined;
    const body = new Readable({
      read() {
        if (killed) return;
        sent += 1 << 20;
        this.push(randomBytes(1 << 20));
        if (sent >= 8 << 20 && !killed) {
          killed = true;
          crashed = victim.crash();
        }
      },
    });
    const upload = fetch(`${victim.url}/v1/projects/${projectId}/fs/write?path=crash/big.bin`, {
      method: 'PUT',
      body: Readable.toWeb(body) as ReadableStream,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/octet-stream' },
      duplex: 'half',
    } as RequestInit);
    await expect(upload).rejects.toThrow();
    // The client may see its connection drop before this process has reaped the child.
    await crashed;
    expect(victim.child.signalCode).toBe('SIGKILL');
    // Every acknowledged version reads back, through the replicas that are left.
    let n = 0;
    for (const [versionId, expected] of acknowledged) {
      const read = await api(n++ % 2, expected.projectId, `/fs/read?versionId=${versionId}`);
      expect(read.status, versionId).toBe(200);
      expect(await read.text()).toBe(expected.content);
    }
    expect((await api(0, projectId, '/fs/stat?path=crash/big.bin')).status).toBe(404);
  }, 120_000);

  it('fsck of the shared Postgres and bucket is clean', async () => {
    const fsck = await runCli(['fsck', '--home', join(dir.path, 'home-0'), '--json'], env, { timeoutMs: 120_000 });
    expect(fsck.code, fsck.stderr).toBe(0);
    expect(parseJson<{ ok: boolean; missing: unknown[]; corrupt: unknown[] }>(fsck)).toMatchObject({ ok: true, missing: [], corrupt: [] });
  }, 120_000);
});
