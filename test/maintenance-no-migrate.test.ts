// fsck, gc and the admin commands that read a server's storage never create or migrate tables: only
// `strata serve` (and --migrate-only, and the first `admin bootstrap`) do. Pointed at an empty or
// wrong schema (a wrong URL, a schema emptied for pg_restore), fsck used to migrate it and report
// "0 objects and 0 references checked: ok", exit 0: a falsely clean check, and a schema no longer
// empty for the restore. They now refuse with NO_STRATA_DATA, saying how to create or restore it.

import { randomBytes } from 'node:crypto';
import { access, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { baseEnv, parseJson, runCli, tempDir } from './cli-harness.js';
import { adminQuery, createTestSchema, TEST_DATABASE_URL } from './helpers/postgres.js';

async function tablesIn(schema: string): Promise<number> {
  return (await adminQuery('SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1', [schema])).rows[0].n as number;
}

async function schemaExists(schema: string): Promise<boolean> {
  return (await adminQuery('SELECT count(*)::int AS n FROM information_schema.schemata WHERE schema_name = $1', [schema])).rows[0].n === 1;
}

function expectNoStrataData(run: { code: number | null; stderr: string }, what: string): void {
  expect(run.code, run.stderr).toBe(4);
  expect(run.stderr).toContain('(NO_STRATA_DATA)');
  expect(run.stderr).toContain(what);
  expect(run.stderr).toContain('strata serve --migrate-only');
  expect(run.stderr).toContain('restore a backup');
}

describe('maintenance commands never migrate', () => {
  it('fsck, gc and admin org list refuse an empty schema and a missing one, and create nothing in either', async () => {
    const dir = await tempDir('strata-nomigrate-pg-');
    const empty = await createTestSchema('strata_nomig');
    const missing = `strata_nomig_gone_${randomBytes(4).toString('hex')}`;
    try {
      const env = { ...baseEnv(join(dir.path, 'config')), STRATA_PEPPER: 'ab'.repeat(32) };
      const missingUrl = new URL(TEST_DATABASE_URL);
      missingUrl.searchParams.set('schema', missing);
      for (const [schema, url] of [
        [empty.schema, empty.url],
        [missing, missingUrl.toString()],
      ] as const) {
        const config = join(dir.path, `${schema}.json`);
        await writeFile(config, JSON.stringify({ home: join(dir.path, 'home'), databaseUrl: url }));
        for (const args of [['fsck'], ['gc'], ['admin', 'org', 'list']]) {
          const run = await runCli([...args, '--config', config], env);
          expectNoStrataData(run, `no Strata tables in schema ${schema}`);
          // Never the URL (it can carry a password), always the schema it looked in.
          expect(run.stderr).not.toContain('postgres://');
        }
      }
      expect(await tablesIn(empty.schema)).toBe(0);
      expect(await schemaExists(missing)).toBe(false);
    } finally {
      await adminQuery(`DROP SCHEMA IF EXISTS ${missing} CASCADE`);
      await empty.drop();
      await dir.remove();
    }
  }, 60_000);

  it('a migrated schema without an organization is refused; after bootstrap fsck checks it', async () => {
    const dir = await tempDir('strata-nomigrate-org-');
    const schema = await createTestSchema('strata_nomig');
    try {
      const env = { ...baseEnv(join(dir.path, 'config')), STRATA_PEPPER: 'cd'.repeat(32) };
      const config = join(dir.path, 'server.json');
      await writeFile(config, JSON.stringify({ home: join(dir.path, 'home'), databaseUrl: schema.url }));
      const migrated = await runCli(['serve', '--migrate-only', '--config', config], env);
      expect(migrated.code, migrated.stderr).toBe(0);
      expectNoStrataData(await runCli(['fsck', '--config', config], env), `tables but no organization in schema ${schema.schema}`);
      const boot = await runCli(['admin', 'bootstrap', '--config', config, '--json'], env);
      expect(boot.code, boot.stderr).toBe(0);
      const fsck = await runCli(['fsck', '--config', config, '--json'], env);
      expect(fsck.code, fsck.stderr).toBe(0);
      expect(parseJson<{ ok: boolean }>(fsck).ok).toBe(true);
    } finally {
      await schema.drop();
      await dir.remove();
    }
  }, 60_000);

  it('fsck and gc --home of a directory without a Strata home refuse and create nothing', async () => {
    const dir = await tempDir('strata-nomigrate-home-');
    try {
      const env = baseEnv(join(dir.path, 'config'));
      const home = join(dir.path, 'no-home');
      for (const command of ['fsck', 'gc']) {
        const run = await runCli([command, '--home', home], env);
        expectNoStrataData(run, `${home} holds no Strata data`);
      }
      await expect(access(home)).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      await dir.remove();
    }
  }, 60_000);
});
