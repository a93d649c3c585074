import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The Postgres the tests use: this machine's (trust auth), or STRATA_TEST_DATABASE_URL. */
export const TEST_DATABASE_URL = process.env.STRATA_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface TestSchema {
  /** the schema's name, also the `schema` option of openPgRepository */
  schema: string;
  /** TEST_DATABASE_URL with `?schema=` set: what `strata serve --database` takes */
  url: string;
  /** drops the schema and everything in it */
  drop: () => Promise<void>;
}

/** A new empty schema of its own for one test (dropped by `drop`, which tests call in a finally). */
export async function createTestSchema(prefix = 'strata_t'): Promise<TestSchema> {
  const schema = `${prefix}_${randomBytes(6).toString('hex')}`;
  await adminQuery(`CREATE SCHEMA ${schema}`);
  const url = new URL(TEST_DATABASE_URL);
  url.searchParams.set('schema', schema);
  return {
    schema,
    url: url.toString(),
    drop: async () => {
      await adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    },
  };
}

export async function adminQuery(sql: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    // Dropping a schema with many tables takes many locks; a test schema is never that big.
    return await client.query(sql, params);
  } finally {
    await client.end();
  }
}
