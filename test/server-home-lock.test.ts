// One process holds a served home (server/home-lock.ts). A tester ran `strata admin migrate-storage`
// while `strata serve` still served the home: it exited 0 with "identical, fsck ok", and every write
// the server took after the copy was lost at the cutover. Now migrate-storage is refused while a
// server runs (HOME_IN_USE, exit 4, naming its pid), a second server on the same home likewise, and
// a server cannot start halfway through a migration. A server killed with -9 leaves a lock that
// blocks nothing. Real `strata serve` child processes, real Postgres and s3rver.

import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireDaemonLock } from '../daemon/lock.js';
import { acquireMigrateLock } from '../server/home-lock.js';
import { baseEnv, parseJson, type RunResult, runCli, type ServeHandle, startServe, tempDir } from './cli-harness.js';
import { adminQuery, createTestSchema, TEST_DATABASE_URL } from './helpers/postgres.js';
import { startS3Server } from './helpers/s3-server.js';

interface CliErrorJson {
  code: string;
  message: string;
  exitCode: number;
  details?: Record<string, unknown>;
}

function errorOf(result: RunResult): CliErrorJson {
  return (JSON.parse(result.stdout) as { error: CliErrorJson }).error;
}

async function bootstrapped(path: string): Promise<{ home: string; env: NodeJS.ProcessEnv }> {
  const home = join(path, 'home');
  const env = baseEnv(join(path, 'config'));
  const boot = await runCli(['admin', 'bootstrap', '--home', home, '--json'], env);
  if (boot.code !== 0) throw new Error(`strata admin bootstrap exited ${boot.code}: ${boot.stderr}`);
  return { home, env };
}

async function tableCount(schema: string): Promise<number> {
  const result = await adminQuery('SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1', [schema]);
  return (result.rows[0] as { n: number }).n;
}

describe('a served home is held by its server', () => {
  it('migrate-storage is refused while strata serve runs (and a second serve on the home), and runs once the server stopped', async () => {
    const dir = await tempDir('strata-home-lock-');
    const schema = await createTestSchema('strata_lock');
    const s3 = await startS3Server();
    const servers: ServeHandle[] = [];
    try {
      const { home, env } = await bootstrapped(dir.path);
      const s3Env = { ...env, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey };
      const migrate = ['admin', 'migrate-storage', '--home', home, '--to-database', schema.url, '--to-objects', s3.url];
      const server = await startServe(home, env);
      servers.push(server);
      const pid = server.child.pid!;

      const refused = await runCli([...migrate, '--json'], s3Env, { timeoutMs: 60_000 });
      expect(refused.code, refused.stderr).toBe(4);
      const error = errorOf(refused);
      expect(error.code).toBe('HOME_IN_USE');
      expect(error.details).toMatchObject({ pid, holder: 'strata serve', home });
      expect(error.message).toBe(`\`strata serve\` (pid ${pid}) is serving ${home}: stop the server first (writes it takes during the copy would be lost), then migrate`);
      // People read the same on stderr, with the code.
      const human = await runCli(migrate, s3Env, { timeoutMs: 60_000 });
      expect(human.code).toBe(4);
      expect(human.stderr).toContain(`(pid ${pid})`);
      expect(human.stderr).toContain('(HOME_IN_USE)');
      // Refused before it touched the target, and the server's lock is still the server's.
      expect(await tableCount(schema.schema)).toBe(0);
      expect(await readFile(join(home, 'server.lock'), 'utf8')).toMatch(new RegExp(`^${pid}\nstrata serve\n`));

      // Two servers on one SQLite home are refused the same way; a server on a home of its own
      // (a replica's) is not held up.
      const second = await runCli(['serve', '--home', home, '--listen', '127.0.0.1:0', '--quiet', '--json'], env);
      expect(second.code, second.stderr).toBe(4);
      expect(errorOf(second)).toMatchObject({ code: 'HOME_IN_USE', details: { pid, holder: 'strata serve' } });
      expect(errorOf(second).message).toContain('stop it first, or give this server a home of its own');
      servers.push(await startServe(join(dir.path, 'replica-home'), env));
      const health = await fetch(`${server.url}/healthz`);
      expect(health.status).toBe(200);

      expect(await server.stop()).toBe(0);
      expect(existsSync(join(home, 'server.lock'))).toBe(false);
      const migrated = await runCli([...migrate, '--json'], s3Env, { timeoutMs: 120_000 });
      expect(migrated.code, migrated.stderr).toBe(0);
      expect(parseJson<{ verified: boolean; fsck: { ok: boolean } }>(migrated)).toMatchObject({ verified: true, fsck: { ok: true } });
      expect(existsSync(join(home, 'server.lock'))).toBe(false);
    } finally {
      for (const server of servers) await server.stop();
      await s3.close();
      await schema.drop();
      await dir.remove();
    }
  }, 240_000);

  it('a server killed with -9 leaves a lock that blocks neither the next server nor migrate-storage', async () => {
    const dir = await tempDir('strata-home-stale-');
    const schema = await createTestSchema('strata_stale');
    const s3 = await startS3Server();
    let server: ServeHandle | undefined;
    try {
      const { home, env } = await bootstrapped(dir.path);
      for (let round = 0; round < 2; round++) {
        server = await startServe(home, env);
        const pid = server.child.pid!;
        server.child.kill('SIGKILL');
        await server.exited;
        // The dead server's pid is still in the file: stale, not removed by anyone.
        expect(await readFile(join(home, 'server.lock'), 'utf8')).toMatch(new RegExp(`^${pid}\nstrata serve\n`));
      }
      server = undefined;
      const s3Env = { ...env, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey };
      const migrated = await runCli(['admin', 'migrate-storage', '--home', home, '--to-database', schema.url, '--to-objects', s3.url, '--json'], s3Env, { timeoutMs: 120_000 });
      expect(migrated.code, migrated.stderr).toBe(0);
      expect(parseJson<{ verified: boolean }>(migrated).verified).toBe(true);
      expect(existsSync(join(home, 'server.lock'))).toBe(false);
    } finally {
      await server?.stop();
      await s3.close();
      await schema.drop();
      await dir.remove();
    }
  }, 240_000);

  it('a server does not start on a home migrate-storage is copying; migrate-storage is refused while the daemon runs', async () => {
    const dir = await tempDir('strata-home-migrating-');
    try {
      const { home, env } = await bootstrapped(dir.path);
      // This test's process stands in for a migrate-storage halfway through its copy.
      const migrating = await acquireMigrateLock(home);
      try {
        const serve = await runCli(['serve', '--home', home, '--listen', '127.0.0.1:0', '--quiet', '--json'], env);
        expect(serve.code, serve.stderr).toBe(4);
        expect(errorOf(serve)).toMatchObject({ code: 'HOME_IN_USE', details: { pid: process.pid, holder: 'strata admin migrate-storage' } });
        expect(errorOf(serve).message).toBe(`\`strata admin migrate-storage\` (pid ${process.pid}) is migrating ${home}: serve it once the migration has finished`);
      } finally {
        await migrating.release();
      }
      expect(existsSync(join(home, 'server.lock'))).toBe(false);

      // The daemon writes to the same SQLite: the same loss, so the same refusal, with its own code.
      const daemon = await acquireDaemonLock(join(home, 'daemon'));
      try {
        const refused = await runCli(['admin', 'migrate-storage', '--home', home, '--to-database', TEST_DATABASE_URL, '--to-objects', 's3://b?endpoint=http://127.0.0.1:1', '--json'], env);
        expect(refused.code, refused.stderr).toBe(4);
        expect(errorOf(refused)).toMatchObject({ code: 'DAEMON_RUNNING', details: { pid: process.pid, home } });
      } finally {
        await daemon.release();
      }
    } finally {
      await dir.remove();
    }
  }, 60_000);
});
