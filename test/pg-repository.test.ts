import { describe, expect, it } from 'vitest';
import { openPgRepository } from '../engine/storage/pg-repository.js';
import { PG_LATEST_SCHEMA_VERSION } from '../engine/storage/pg-migrations.js';
import { metadataRepositoryConformance } from './conformance/metadata-repository.js';
import { commitAll, PROJECT, recordMaker } from './conformance/metadata-repository-fixtures.js';
import { adminQuery, createTestSchema } from './helpers/postgres.js';

metadataRepositoryConformance('postgres', async () => {
  const schema = await createTestSchema();
  try {
    const repository = await openPgRepository({ url: schema.url, max: 4 });
    return {
      repository,
      cleanup: async () => {
        await repository.close();
        await schema.drop();
      },
    };
  } catch (error) {
    await schema.drop();
    throw error;
  }
});

describe('postgres repository specifics', () => {
  it('migrates once when replicas start at once; reopening keeps the data', async () => {
    const schema = await createTestSchema();
    try {
      const opened = await Promise.all([1, 2, 3].map(() => openPgRepository({ url: schema.url, max: 2 })));
      const make = recordMaker();
      await commitAll(opened[0]!, [make.write('kept.txt', 'still here')]);
      await Promise.all(opened.map((repository) => repository.close()));
      const again = await openPgRepository({ url: schema.url, max: 2 });
      expect((await again.versions.getEntry(PROJECT, 'kept.txt'))?.size).toBe(10);
      await again.close();
      const { rows } = await adminQuery(`SELECT version FROM ${schema.schema}.schema_migrations ORDER BY version`);
      expect(rows.map((row) => row.version)).toStrictEqual(Array.from({ length: PG_LATEST_SCHEMA_VERSION }, (_, i) => i + 1));
    } finally {
      await schema.drop();
    }
  });

  it('refuses a database migrated by a newer Strata', async () => {
    const schema = await createTestSchema();
    try {
      await (await openPgRepository({ url: schema.url, max: 1 })).close();
      await adminQuery(`INSERT INTO ${schema.schema}.schema_migrations (version, name) VALUES (999, 'future')`);
      await expect(openPgRepository({ url: schema.url, max: 1 })).rejects.toMatchObject({ code: 'STORAGE_ERROR', details: { schemaVersion: 999 } });
    } finally {
      await schema.drop();
    }
  });

  it('fails to open with STORAGE_ERROR when the database is unreachable, without the password in the message', async () => {
    const error = await openPgRepository({ url: 'postgres://strata:hunter2secret@127.0.0.1:1/none', max: 1 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'STORAGE_ERROR' });
    expect(String((error as Error).message)).not.toContain('hunter2secret');
  });
});
