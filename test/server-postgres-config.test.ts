// What a platform team configures for a server on Postgres + S3: --migrate-only as a deploy step,
// the settings in a --config file with secrets in files, readiness that follows the database and the
// bucket, and a server that refuses to start without the pepper its replicas must share. No secret
// (database password, S3 secret key, pepper) ever appears in the server's output.

import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { baseEnv, parseJson, runCli, startServe, tempDir } from './cli-harness.js';
import { adminQuery, createTestSchema, TEST_DATABASE_URL } from './helpers/postgres.js';
import { startS3Server } from './helpers/s3-server.js';

describe('a server on Postgres and S3, configured', () => {
  it('serve --migrate-only migrates a Postgres schema once, even when two run at once', async () => {
    const dir = await tempDir('strata-pg-migrate-');
    const schema = await createTestSchema('strata_cfg');
    try {
      const env = { ...baseEnv(join(dir.path, 'config')), STRATA_DATABASE_URL: schema.url };
      const runs = await Promise.all([1, 2].map((n) => runCli(['serve', '--migrate-only', '--home', join(dir.path, `h${n}`), '--json'], env)));
      for (const run of runs) expect(run.code, run.stderr).toBe(0);
      const results = runs.map((run) => parseJson<{ database: string; schemaVersion: number; applied: number[] }>(run));
      expect(results.map((r) => r.database)).toStrictEqual(['postgres', 'postgres']);
      const applied = results.map((r) => r.applied).sort((a, b) => b.length - a.length);
      expect(applied[0]).toStrictEqual(Array.from({ length: results[0]!.schemaVersion }, (_, i) => i + 1));
      expect(applied[1]).toStrictEqual([]);
    } finally {
      await schema.drop();
      await dir.remove();
    }
  }, 60_000);

  it('creates the schema the URL names on first start; a wrong database is named in words', async () => {
    const dir = await tempDir('strata-pg-schema-');
    const schema = `strata_new_${randomBytes(4).toString('hex')}`;
    const url = new URL(TEST_DATABASE_URL);
    url.searchParams.set('schema', schema);
    try {
      const env = baseEnv(join(dir.path, 'config'));
      const run = await runCli(['serve', '--migrate-only', '--home', join(dir.path, 'h'), '--database', url.toString(), '--json'], env);
      expect(run.code, run.stderr).toBe(0);
      expect((await adminQuery('SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1', [schema])).rows[0].n).toBeGreaterThan(10);
      const missing = new URL(url);
      missing.pathname = '/no_such_database';
      const wrong = await runCli(['serve', '--migrate-only', '--home', join(dir.path, 'h'), '--database', missing.toString()], env);
      expect(wrong.code).not.toBe(0);
      expect(wrong.stderr).toContain('3D000 (no such database)');
    } finally {
      await adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await dir.remove();
    }
  }, 60_000);

  it('migrate-storage says what is missing: the target, or a home to move', async () => {
    const dir = await tempDir('strata-pg-move-');
    try {
      const env = baseEnv(join(dir.path, 'config'));
      const noTarget = await runCli(['admin', 'migrate-storage', '--home', join(dir.path, 'none')], env);
      expect(noTarget.code).toBe(2);
      expect(noTarget.stderr).toContain('--to-database');
      const noHome = await runCli(['admin', 'migrate-storage', '--home', join(dir.path, 'none'), '--to-database', TEST_DATABASE_URL, '--to-objects', 's3://b?endpoint=http://127.0.0.1:1'], env);
      expect(noHome.code).toBe(6);
      expect(noHome.stderr).toContain(`There is no Strata home to move at ${join(dir.path, 'none')}`);
    } finally {
      await dir.remove();
    }
  }, 60_000);

  it('refuses to serve on Postgres without a shared pepper, saying which setting to make', async () => {
    const dir = await tempDir('strata-pg-pepper-');
    const schema = await createTestSchema('strata_cfg');
    try {
      const env = { ...baseEnv(join(dir.path, 'config')), STRATA_DATABASE_URL: schema.url };
      const run = await runCli(['serve', '--home', join(dir.path, 'home'), '--listen', '127.0.0.1:0'], env, { timeoutMs: 30_000 });
      expect(run.code).toBe(6);
      expect(run.stderr).toContain('STRATA_PEPPER_FILE');
      const badSize = await runCli(['serve', '--home', join(dir.path, 'home'), '--listen', '127.0.0.1:0'], { ...env, STRATA_PEPPER: 'ab'.repeat(32), STRATA_OBJECTS_URL: 's3://b?endpoint=http://127.0.0.1:1', STRATA_SMALL_OBJECT_MAX_BYTES: '64k' }, { timeoutMs: 30_000 });
      expect(badSize.code).toBe(6);
      expect(badSize.stderr).toContain('STRATA_SMALL_OBJECT_MAX_BYTES must be a whole number of bytes');
    } finally {
      await schema.drop();
      await dir.remove();
    }
  }, 60_000);

  it('--config with secrets in files: serves, /readyz follows the bucket, and no secret reaches the output', async () => {
    const dir = await tempDir('strata-pg-config-');
    const schema = await createTestSchema('strata_cfg');
    const s3 = await startS3Server();
    let server: Awaited<ReturnType<typeof startServe>> | undefined;
    try {
      // Trust authentication ignores the password, which lets the test see that it is never printed.
      const password = `pw${randomBytes(8).toString('hex')}`;
      const databaseUrl = new URL(schema.url);
      databaseUrl.password = password;
      const pepper = randomBytes(32).toString('hex');
      const secret = (name: string, value: string) => writeFile(join(dir.path, name), `${value}\n`, { mode: 0o600 });
      await secret('database-url', databaseUrl.toString());
      await secret('s3-key-id', s3.accessKeyId);
      await secret('s3-secret', s3.secretAccessKey);
      await secret('pepper', pepper);
      const config = join(dir.path, 'server.json');
      await writeFile(
        config,
        JSON.stringify({
          home: join(dir.path, 'home'),
          databaseUrlFile: join(dir.path, 'database-url'),
          objectsUrl: s3.url,
          s3AccessKeyIdFile: join(dir.path, 's3-key-id'),
          s3SecretAccessKeyFile: join(dir.path, 's3-secret'),
          pepperFile: join(dir.path, 'pepper'),
          environment: 'prod',
          smallObjectMaxBytes: 1024,
        }),
      );
      const env = baseEnv(join(dir.path, 'config'));
      const boot = await runCli(['admin', 'bootstrap', '--config', config, '--json'], env);
      expect(boot.code, boot.stderr).toBe(0);
      const apiKey = parseJson<{ apiKey: string }>(boot).apiKey;
      expect(apiKey.startsWith('rk.prod.')).toBe(true);
      server = await startServe(join(dir.path, 'home'), env, 20_000, ['--config', config]);
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
      const whoami = await runCli(['whoami', '--json'], { ...env, STRATA_SERVER_URL: server.url, STRATA_API_KEY: apiKey });
      expect(whoami.code, whoami.stderr).toBe(0);

      // smallObjectMaxBytes (a number in the file): up to 1 KiB a row of Postgres, above it a bucket object.
      const auth = { authorization: `Bearer ${apiKey}` };
      const created = await fetch(`${server.url}/v1/projects`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'tiers' }) });
      expect(created.status).toBe(201);
      const { projectId } = (await created.json()) as { projectId: string };
      const put = async (path: string, bytes: number) => {
        const response = await fetch(`${server!.url}/v1/projects/${projectId}/fs/write?path=${path}`, { method: 'PUT', headers: auth, body: randomBytes(bytes) });
        expect(response.status).toBe(201);
        return ((await response.json()) as { version: { contentHash: string } }).version.contentHash;
      };
      const small = await put('small.txt', 1024);
      const large = await put('large.txt', 1025);
      const rows = await adminQuery(`SELECT content_hash FROM ${schema.schema}.small_objects`);
      expect(rows.rows.map((row) => row.content_hash)).toEqual([small]);
      const client = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
      try {
        const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: 'objects/' }));
        expect((listed.Contents ?? []).map((c) => c.Key)).toEqual([expect.stringContaining(large.slice('blake3:'.length))]);
      } finally {
        client.destroy();
      }

      await s3.close();
      const down = await fetch(`${server.url}/readyz`);
      expect(down.status).toBe(503);
      const body = (await down.json()) as { error: { code: string; details: { checks: Record<string, string> } } };
      expect(body.error.code).toBe('NOT_READY');
      expect(body.error.details.checks['metadata']).toBe('ok');
      expect(body.error.details.checks['objects']).not.toBe('ok');

      const output = `${server.stderr()}${boot.stderr}${boot.stdout}${JSON.stringify(body)}`;
      for (const value of [password, s3.secretAccessKey, pepper]) expect(output).not.toContain(value);
      expect(output).not.toContain(TEST_DATABASE_URL.replace('postgres://', `postgres://postgres:${password}@`));
    } finally {
      await server?.stop();
      await s3.close().catch(() => {});
      await schema.drop();
      await dir.remove();
    }
  }, 90_000);
});
