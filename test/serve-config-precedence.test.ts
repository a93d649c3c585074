// The documented order of the server's settings, flags > environment > config file > defaults, holds
// for secrets too: a secret's `_FILE` form counts as its source's. A config's `databaseUrl` used to
// beat the environment's STRATA_DATABASE_URL_FILE (the file was read only when the merged plain
// variable was empty), so a deploy's secret was silently ignored for the config's database.

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isStrataError } from '../engine/errors.js';
import { serveEnvironment } from '../server/serve-config.js';
import { baseEnv, parseJson, runCli, tempDir } from './cli-harness.js';
import { adminQuery, createTestSchema, TEST_DATABASE_URL } from './helpers/postgres.js';

describe('serve settings: the environment wins over the config file, in either form', () => {
  // [config key, its value, env file variable, the variable it fills]
  const pairs = [
    ['databaseUrl', 'postgres://cfg@db/walk17_config_db', 'STRATA_DATABASE_URL_FILE', 'STRATA_DATABASE_URL'],
    ['redisUrl', 'redis://config-cache:6379', 'STRATA_REDIS_URL_FILE', 'STRATA_REDIS_URL'],
  ] as const;
  for (const [key, configValue, fileVariable, variable] of pairs) {
    it(`${fileVariable} in the environment beats '${key}' in the config file`, async () => {
      const dir = await tempDir('strata-prec-');
      try {
        const secret = join(dir.path, 'secret');
        await writeFile(secret, `${variable.toLowerCase()}-from-env-file\n`, { mode: 0o600 });
        const config = join(dir.path, 'prec.json');
        await writeFile(config, JSON.stringify({ [key]: configValue }));
        expect(serveEnvironment(config, { [fileVariable]: secret })[variable]).toBe(`${variable.toLowerCase()}-from-env-file`);
        // The plain variable in the environment wins too, and over the environment's own file.
        expect(serveEnvironment(config, { [variable]: 'plain', [fileVariable]: secret })[variable]).toBe('plain');
        // Only the config: it applies.
        expect(serveEnvironment(config, {})[variable]).toBe(configValue);
      } finally {
        await dir.remove();
      }
    });
  }

  it("the config's secret files are read only when the environment gives nothing: a missing one then fails by name", async () => {
    const dir = await tempDir('strata-prec-files-');
    try {
      const config = join(dir.path, 'prec.json');
      const missing = join(dir.path, 'absent');
      await writeFile(config, JSON.stringify({ databaseUrlFile: missing, redisUrlFile: missing, pepperFile: missing, s3AccessKeyIdFile: missing, s3SecretAccessKeyFile: missing }));
      const env = serveEnvironment(config, { STRATA_DATABASE_URL: 'postgres://env/db', STRATA_REDIS_URL: 'redis://env:6379', STRATA_PEPPER: 'p'.repeat(32), AWS_ACCESS_KEY_ID: 'id', AWS_SECRET_ACCESS_KEY: 'sk' });
      expect([env['STRATA_DATABASE_URL'], env['STRATA_REDIS_URL'], env['AWS_ACCESS_KEY_ID']]).toStrictEqual(['postgres://env/db', 'redis://env:6379', 'id']);
      let thrown: unknown;
      try {
        serveEnvironment(config, {});
      } catch (error) {
        thrown = error;
      }
      expect(isStrataError(thrown, 'INVALID_ARGUMENT')).toBe(true);
      expect((thrown as Error).message).toBe(`cannot read STRATA_PEPPER_FILE ${missing} (ENOENT)`);
    } finally {
      await dir.remove();
    }
  });

  it('strata serve --migrate-only --config: STRATA_DATABASE_URL_FILE picks the database, not the config', async () => {
    const dir = await tempDir('strata-prec-cli-');
    const schema = await createTestSchema('strata_prec');
    try {
      const wrong = new URL(TEST_DATABASE_URL);
      wrong.pathname = '/walk17_config_db';
      const config = join(dir.path, 'prec.json');
      await writeFile(config, JSON.stringify({ home: join(dir.path, 'home'), databaseUrl: wrong.toString() }));
      const secret = join(dir.path, 'db-url');
      await writeFile(secret, `${schema.url}\n`, { mode: 0o600 });
      const run = await runCli(['serve', '--migrate-only', '--config', config, '--json'], { ...baseEnv(join(dir.path, 'config')), STRATA_DATABASE_URL_FILE: secret });
      expect(run.code, run.stderr).toBe(0);
      expect(parseJson<{ database: string }>(run).database).toBe('postgres');
      expect((await adminQuery('SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1', [schema.schema])).rows[0].n).toBeGreaterThan(10);
    } finally {
      await schema.drop();
      await dir.remove();
    }
  }, 60_000);
});
