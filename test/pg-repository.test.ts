import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createCommitBatcher } from '../engine/commit-batcher.js';
import { openPgRepository } from '../engine/storage/pg-repository.js';
import { createServerMetrics } from '../server/metrics.js';
import { PG_LATEST_SCHEMA_VERSION } from '../engine/storage/pg-migrations.js';
import { metadataRepositoryConformance } from './conformance/metadata-repository.js';
import { commitAll, PROJECT, recordMaker } from './conformance/metadata-repository-fixtures.js';
import { adminQuery, createTestSchema, TEST_DATABASE_URL } from './helpers/postgres.js';
import { waitFor } from './daemon-harness.js';

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

  it("a batch that waited for another replica's lock takes in what queued meanwhile: one transaction", async () => {
    const schema = await createTestSchema();
    const repository = await openPgRepository({ url: schema.url, max: 4 });
    // The other replica: a transaction holding the project's lock, as a commit of its would.
    const other = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await other.connect();
    try {
      const batcher = createCommitBatcher(repository, () => {});
      // A project of its own: advisory locks are the database's, and other tests' projects lock too.
      const project = randomUUID();
      const make = recordMaker(project);
      await other.query('BEGIN');
      await other.query('SELECT pg_advisory_xact_lock(1, hashtext($1))', [project]);
      const first = batcher.submit({ record: make.write('first.txt', '1') });
      const waiting = `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = 1 AND objid = (hashtext($1)::bigint & 4294967295)::oid`;
      await waitFor('the batch to wait for the lock', async () => ((await adminQuery(waiting, [project])).rowCount === 1 ? true : undefined));
      const late = ['a.txt', 'b.txt', 'c.txt'].map((path) => batcher.submit({ record: make.write(path, path), checkPath: true }));
      await other.query('COMMIT');
      const results = await Promise.all([first, ...late]);
      expect(results.map((result) => result.ok)).toStrictEqual([true, true, true, true]);
      // Rows written by one transaction share its id (xmin).
      const { rows } = await adminQuery(`SELECT path, xmin::text AS xid FROM ${schema.schema}.versions ORDER BY seq`);
      expect(rows.map((row) => row.path)).toStrictEqual(['first.txt', 'a.txt', 'b.txt', 'c.txt']);
      expect(new Set(rows.map((row) => row.xid)).size).toBe(1);
    } finally {
      await other.end();
      await repository.close();
      await schema.drop();
    }
  });

  it("the server's version counters count a batch's latecomers too", async () => {
    const schema = await createTestSchema();
    const repository = await openPgRepository({ url: schema.url, max: 1 });
    try {
      const metrics = createServerMetrics();
      const counted = metrics.countVersions(repository);
      const make = recordMaker(randomUUID());
      const late = [make.write('b.txt', 'bb'), make.write('c.txt', 'ccc')];
      const results = await counted.versions.commit([{ record: make.write('a.txt', 'a') }], { latecomers: () => late.map((record) => ({ record })) });
      expect(results.map((result) => result.ok)).toStrictEqual([true, true, true]);
      const text = await metrics.registry.metrics();
      expect(text).toContain('strata_versions_written_total 3');
      expect(text).toContain('strata_version_bytes_written_total 6');
    } finally {
      await repository.close();
      await schema.drop();
    }
  });

  it("a statement sent ahead of the COMMIT that fails fails the transaction: nothing commits, the connection stays usable", async () => {
    const schema = await createTestSchema();
    const repository = await openPgRepository({ url: schema.url, max: 1 });
    try {
      await adminQuery(`CREATE TABLE ${schema.schema}.sent_test (x integer PRIMARY KEY)`);
      const failed = repository.db.tx(async (tx) => {
        await tx.query('INSERT INTO sent_test VALUES (1)');
        tx.send('INSERT INTO sent_test VALUES (2)');
        tx.send('INSERT INTO sent_test VALUES (2)');
        tx.send('INSERT INTO sent_test VALUES (3)');
      });
      await expect(failed).rejects.toMatchObject({ code: 'STORAGE_ERROR' });
      expect((await adminQuery(`SELECT x FROM ${schema.schema}.sent_test`)).rows).toStrictEqual([]);
      // The same (only) pooled connection, after: a sent statement's rows, read once committed.
      let sent: Promise<Array<{ x: number }>> | undefined;
      await repository.db.tx(async (tx) => {
        sent = tx.send<{ x: number }>('INSERT INTO sent_test VALUES (4), (5) RETURNING x');
      });
      expect(await sent).toStrictEqual([{ x: 4 }, { x: 5 }]);
      expect((await adminQuery(`SELECT x FROM ${schema.schema}.sent_test ORDER BY x`)).rows).toStrictEqual([{ x: 4 }, { x: 5 }]);
    } finally {
      await repository.close();
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
