// Moving a server's data, as a platform team does it from the command line: a home that started on
// SQLite + its object directory moved to Postgres + S3 with `strata admin migrate-storage`, and the
// documented backup and restore of a Postgres + S3 server (docs/server.md): pg_dump and a bucket copy,
// the originals destroyed, pg_restore and the copy put back. Each ends with fsck clean and every
// version reading back as it was, with the same API key.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { baseEnv, parseJson, runCli, servedHome, startServe, tempDir } from './cli-harness.js';
import { adminQuery, createTestSchema } from './helpers/postgres.js';
import { startS3Server, type TestS3Server } from './helpers/s3-server.js';

interface Version {
  versionId: string;
  path: string;
  contentHash: string | null;
}

/** Every version of the project (history, newest first) with its bytes, read through the API. */
async function everyVersion(url: string, apiKey: string, projectId: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let cursor: string | undefined;
  do {
    const page = (await (
      await fetch(`${url}/v1/projects/${projectId}/history?limit=100${cursor === undefined ? '' : `&cursor=${cursor}`}`, { headers: { authorization: `Bearer ${apiKey}` } })
    ).json()) as { items: Version[]; nextCursor?: string };
    for (const version of page.items) {
      if (version.contentHash === null) {
        out.set(version.versionId, '(deleted)');
        continue;
      }
      const read = await fetch(`${url}/v1/projects/${projectId}/fs/read?versionId=${version.versionId}`, { headers: { authorization: `Bearer ${apiKey}` } });
      expect(read.status, version.path).toBe(200);
      out.set(version.versionId, `${version.path}:${Buffer.from(await read.arrayBuffer()).toString('base64')}`);
    }
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return out;
}

async function snapshotsOf(url: string, apiKey: string, projectId: string): Promise<unknown> {
  const listed = (await (await fetch(`${url}/v1/projects/${projectId}/fs/snapshots`, { headers: { authorization: `Bearer ${apiKey}` } })).json()) as { items: unknown[] };
  return listed.items;
}

/** Files, an edit, a deletion, snapshots, a tag and a dataset of several shards, through the CLI. */
async function populate(env: NodeJS.ProcessEnv, scratch: string): Promise<string> {
  const cli = async (args: string[]) => {
    const result = await runCli([...args, '--json'], env, { timeoutMs: 60_000 });
    if (result.code !== 0) throw new Error(`strata ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
    return result;
  };
  const projectId = parseJson<{ projectId: string }>(await cli(['project', 'create', 'moved'])).projectId;
  const put = async (name: string, content: string | Buffer) => {
    const file = join(scratch, name.replaceAll('/', '_'));
    await writeFile(file, content);
    await cli(['put', file, name, '--project', projectId]);
  };
  await put('src/fit.m', 'x = 1;\n');
  await put('notes.md', '# notes\n');
  await put('gone.txt', 'to be deleted\n');
  await cli(['snapshot', 'create', '-m', 'first', '--project', projectId]);
  await put('src/fit.m', 'x = 2;\n');
  await cli(['rm', 'gone.txt', '--project', projectId]);
  await cli(['dataset', 'track', '**/*.h5', '--project', projectId]);
  await put('data/run.h5', Buffer.from(Buffer.alloc(3 << 20).map((_, i) => (Math.imul(i, 2654435761) >>> 24) ^ (i >>> 12))));
  const second = parseJson<{ snapshotId: string }>(await cli(['snapshot', 'create', '-m', 'second', '--project', projectId]));
  await cli(['tag', 'add', second.snapshotId, 'v1', '--project', projectId]);
  return projectId;
}

function s3Client(s3: TestS3Server): S3Client {
  return new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
}

async function* keysOf(client: S3Client, bucket: string): AsyncIterable<string> {
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, ...(token === undefined ? {} : { ContinuationToken: token }) }));
    for (const object of page.Contents ?? []) yield object.Key!;
    token = page.NextContinuationToken;
  } while (token !== undefined);
}

/**
 * The database lines (DB_URL=, SCHEMA=, pg_dump, pg_restore) of docs/server.md's backup and restore
 * blocks, as written: the test runs what an operator copies. The bucket lines (aws s3 sync) are
 * done with the SDK instead.
 */
async function documentedDatabaseLines(): Promise<{ backup: string; restore: string }> {
  const docs = await readFile(join(import.meta.dirname, '..', 'docs', 'server.md'), 'utf8');
  const section = docs.slice(docs.indexOf('## Backup and restore'), docs.indexOf('## Moving up from SQLite'));
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!.split('\n').filter((line) => /^(DB_URL=|SCHEMA=|pg_dump |pg_restore )/.test(line)).join('\n'));
  expect(blocks).toHaveLength(2);
  return { backup: blocks[0]!, restore: blocks[1]! };
}

async function runShell(script: string, cwd: string, env: NodeJS.ProcessEnv): Promise<void> {
  const child = spawn('sh', ['-euc', script], { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number];
  if (code !== 0) throw new Error(`sh exited ${code} running\n${script}\n${stderr}`);
}

describe('moving a server', () => {
  it('strata admin migrate-storage moves a SQLite home to Postgres + S3; every version, snapshot and key survives', async () => {
    const served = await servedHome('strata-migrate-');
    const schema = await createTestSchema('strata_mig');
    const s3 = await startS3Server();
    let server: Awaited<ReturnType<typeof startServe>> | undefined;
    try {
      const home = join(served.dir.path, 'home');
      const projectId = await populate(served.env, served.dir.path);
      const before = await everyVersion(served.server.url, served.apiKey, projectId);
      const snapshotsBefore = await snapshotsOf(served.server.url, served.apiKey, projectId);
      expect(before.size).toBe(6);
      await served.server.stop();

      const s3Env = { AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey };
      const migrated = await runCli(['admin', 'migrate-storage', '--home', home, '--to-database', schema.url, '--to-objects', s3.url, '--json'], { ...served.env, ...s3Env }, { timeoutMs: 120_000 });
      expect(migrated.code, migrated.stderr).toBe(0);
      const report = parseJson<{ verified: boolean; fsck: { ok: boolean }; objects: { total: number; copied: number }; tables: Array<{ table: string; rows: number }>; pepperFile: string }>(migrated);
      expect(report.verified).toBe(true);
      expect(report.fsck.ok).toBe(true);
      expect(report.objects.copied).toBe(report.objects.total);
      expect(report.tables.find((t) => t.table === 'versions')?.rows).toBe(6);

      // A second run refuses: the target is no longer empty.
      const again = await runCli(['admin', 'migrate-storage', '--home', home, '--to-database', schema.url, '--to-objects', s3.url], { ...served.env, ...s3Env });
      expect(again.code).not.toBe(0);
      expect(again.stderr).toContain('already holds organizations');

      server = await startServe(join(served.dir.path, 'replica-home'), {
        ...served.env,
        ...s3Env,
        STRATA_DATABASE_URL: schema.url,
        STRATA_OBJECTS_URL: s3.url,
        STRATA_PEPPER_FILE: report.pepperFile,
      });
      // The same key, the same versions byte for byte, the same snapshots.
      expect(await everyVersion(server.url, served.apiKey, projectId)).toStrictEqual(before);
      expect(await snapshotsOf(server.url, served.apiKey, projectId)).toStrictEqual(snapshotsBefore);
      // The dataset moved as its manifest and shards, and is still one.
      const stat = (await (await fetch(`${server.url}/v1/projects/${projectId}/fs/stat?path=data/run.h5`, { headers: { authorization: `Bearer ${served.apiKey}` } })).json()) as { dataset: boolean };
      expect(stat.dataset).toBe(true);
      expect(report.objects.total).toBeGreaterThanOrEqual(7);
      // Writes continue after the copied history (the identity sequences moved past it).
      await writeFile(join(served.dir.path, 'after.txt'), 'after the move\n');
      const put = await runCli(['put', join(served.dir.path, 'after.txt'), 'after.txt', '--project', projectId], { ...served.env, STRATA_SERVER_URL: server.url });
      expect(put.code, put.stderr).toBe(0);
    } finally {
      await server?.stop();
      await served.dispose();
      await s3.close();
      await schema.drop();
    }
  }, 240_000);

  it('backup (pg_dump + a bucket copy), destroy, restore: fsck clean and every version readable', async () => {
    const dir = await tempDir('strata-backup-');
    const schema = await createTestSchema('strata_bak');
    const s3 = await startS3Server();
    const client = s3Client(s3);
    let server: Awaited<ReturnType<typeof startServe>> | undefined;
    try {
      const env = {
        ...baseEnv(join(dir.path, 'config')),
        STRATA_DATABASE_URL: schema.url,
        STRATA_OBJECTS_URL: s3.url,
        AWS_ACCESS_KEY_ID: s3.accessKeyId,
        AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
        STRATA_PEPPER: 'a1'.repeat(32),
      };
      const home = join(dir.path, 'home');
      const boot = await runCli(['admin', 'bootstrap', '--home', home, '--json'], env);
      expect(boot.code, boot.stderr).toBe(0);
      const apiKey = parseJson<{ apiKey: string }>(boot).apiKey;
      server = await startServe(home, env);
      const clientEnv = { ...env, STRATA_SERVER_URL: server.url, STRATA_API_KEY: apiKey };
      const projectId = await populate(clientEnv, dir.path);
      const before = await everyVersion(server.url, apiKey, projectId);

      // Back up: the database first, then the bucket. Content is stored before the records that
      // reference it, so a bucket copied after the dump holds everything the dump references.
      // The documented commands, with Strata's URL (?schema=…) as DATABASE_URL: libpq refuses that
      // parameter, so they must take it out and name the schema.
      const documented = await documentedDatabaseLines();
      const shellEnv = { ...process.env, DATABASE_URL: schema.url };
      await runShell(documented.backup, dir.path, shellEnv);
      // The backup names its dump by date; the restore block names an example date.
      const dumps = (await readdir(dir.path)).filter((name) => /^strata-\d{4}-\d{2}-\d{2}\.dump$/.test(name));
      expect(dumps).toHaveLength(1);
      const restoreName = /strata-[\d-]+\.dump/.exec(documented.restore)?.[0];
      expect(restoreName).toBeDefined();
      await rename(join(dir.path, dumps[0]!), join(dir.path, restoreName!));
      const copy = join(dir.path, 'bucket-copy');
      for await (const key of keysOf(client, s3.bucket)) {
        const object = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
        await mkdir(dirname(join(copy, key)), { recursive: true });
        await writeFile(join(copy, key), await object.Body!.transformToByteArray());
      }

      // Destroy both.
      await server.stop();
      server = undefined;
      await adminQuery(`DROP SCHEMA ${schema.schema} CASCADE`);
      for await (const key of keysOf(client, s3.bucket)) await client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: key }));
      // Gone, both (a server started now would create an empty schema and serve nothing).
      expect((await adminQuery('SELECT count(*)::int AS n FROM information_schema.schemata WHERE schema_name = $1', [schema.schema])).rows[0].n).toBe(0);
      for await (const key of keysOf(client, s3.bucket)) throw new Error(`${key} is still in the bucket`);

      // Restore: pg_restore (the documented lines) recreates the schema; the copy goes back into the bucket.
      await runShell(documented.restore, dir.path, shellEnv);
      const walk = async (at: string): Promise<string[]> =>
        (await readdir(at, { withFileTypes: true })).flatMap((e) => (e.isDirectory() ? [] : [join(at, e.name)])).concat(
          ...(await Promise.all((await readdir(at, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => walk(join(at, e.name))))),
        );
      for (const file of await walk(copy)) {
        await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: relative(copy, file), Body: await readFile(file) }));
      }

      const fsck = await runCli(['fsck', '--home', home, '--json'], env, { timeoutMs: 120_000 });
      expect(fsck.code, fsck.stderr).toBe(0);
      expect(parseJson<{ ok: boolean }>(fsck).ok).toBe(true);
      server = await startServe(home, env);
      expect(await everyVersion(server.url, apiKey, projectId)).toStrictEqual(before);
    } finally {
      await server?.stop();
      client.destroy();
      await s3.close();
      await schema.drop();
      await dir.remove();
    }
  }, 240_000);
});
