import { createHash } from 'node:crypto';
import pg from 'pg';
import { StrataError } from '../errors.js';

// The Postgres connection pool and the one way this repository talks to it: `db.tx(fn, locks)`, a
// transaction on one pooled client. Every repository method is one transaction (the port's contract),
// so replicas are correct by what the database serializes, never by what a process remembers.
//
// Serial invariants (the snapshot chain, a conditional write's single winner, a git push applied once)
// hold across replicas because every transaction that changes a project first takes that project's
// transaction-scoped advisory lock: writers of one project queue in the database the way SQLite's
// single writer queues them, and writers of different projects never wait on each other. Access
// changes (guards such as "another owner remains") take one lock for all of them: they are rare.
// Locks are taken in a fixed order (access, then projects sorted), so two transactions never deadlock.

const INT8_OID = 20;
const NUMERIC_OID = 1700;

// bigint columns (seqs, sizes) and sums as JS numbers: exact below 2^53, far beyond any count or size here.
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID || oid === NUMERIC_OID) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
};

export interface PgOptions {
  /** postgres://user:password@host:port/database; `?schema=NAME` selects a schema other than public */
  url: string;
  /** schema for every table (default: the URL's `schema` parameter, else the server's search_path) */
  schema?: string;
  /** pool size (default 10) */
  max?: number;
  /** how long opening a connection may take before it fails as unreachable (default 10 s) */
  connectTimeoutMs?: number;
}

/**
 * A statement Postgres parses once per connection instead of at every call (pg's named prepared
 * statements): for the few every write runs, where parsing was a large part of the database's CPU. Its text is constant, and names its columns: a prepared `SELECT *` fails on every
 * connection that prepared it once a migration (another replica's upgrade) adds a column.
 */
export interface Prepared {
  readonly name: string;
  readonly text: string;
}

export function prepared(text: string): Prepared {
  return { name: `strata_${createHash('sha256').update(text).digest('hex').slice(0, 20)}`, text };
}

export type Sql = string | Prepared;

function queryConfig(sql: Sql, params: readonly unknown[] | undefined): pg.QueryConfig {
  const values = params as unknown[] | undefined;
  const base = typeof sql === 'string' ? { text: sql } : { name: sql.name, text: sql.text };
  return values === undefined ? base : { ...base, values };
}

export interface Tx {
  query<Row = Record<string, unknown>>(sql: Sql, params?: readonly unknown[]): Promise<Row[]>;
  /**
   * Sends a statement without waiting for its answer: the COMMIT follows it on the wire (the pool's
   * connections are pipelined), so a transaction's last statements and its COMMIT cost one round
   * trip. Its failure fails the transaction (nothing commits) and is what `db.tx` throws; its rows
   * are for reading once `db.tx` has returned.
   */
  send<Row = Record<string, unknown>>(sql: Sql, params?: readonly unknown[]): Promise<Row[]>;
  /** the first row, or undefined */
  one<Row = Record<string, unknown>>(sql: Sql, params?: readonly unknown[]): Promise<Row | undefined>;
}

export interface TxLocks {
  /** projects whose writers this transaction excludes until it ends */
  projects?: readonly string[];
  /** the lock of access changes */
  access?: boolean;
  /** read only: no locks, and Postgres may skip some work */
  readOnly?: boolean;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Splits our `schema` parameter off the URL (pg would pass an unknown parameter to the server). */
export function parseDatabaseUrl(url: string): { connectionString: string; schema: string | undefined } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new StrataError('INVALID_ARGUMENT', { message: 'The database URL is not a URL', details: { field: 'database' } });
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new StrataError('INVALID_ARGUMENT', { message: 'The database URL must start with postgres://', details: { field: 'database' } });
  }
  const schema = parsed.searchParams.get('schema') ?? undefined;
  parsed.searchParams.delete('schema');
  return { connectionString: parsed.toString(), schema };
}

export class PgDatabase {
  readonly pool: pg.Pool;
  readonly schema: string | undefined;

  constructor(options: PgOptions) {
    const { connectionString, schema: urlSchema } = parseDatabaseUrl(options.url);
    const schema = options.schema ?? urlSchema;
    if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
      throw new StrataError('INVALID_ARGUMENT', { message: 'The database schema name must be lowercase letters, digits and _', details: { field: 'schema' } });
    }
    this.schema = schema;
    this.pool = new pg.Pool({
      connectionString,
      max: options.max ?? 10,
      types,
      // Set per connection at startup, so no query ever runs against another schema.
      // Prepared statements are planned for their values at every call, never with a generic plan:
      // that plan made the write path's statements cost 1.5× the database CPU of unprepared ones,
      // while skipping only the parse made them cost 0.75× (bench/server-storage.ts).
      options: [schema === undefined ? '' : `-c search_path=${schema}`, '-c plan_cache_mode=force_custom_plan'].filter((o) => o !== '').join(' '),
      connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
      pipeline: true,
      application_name: 'strata',
    });
    // An idle client that loses its connection (a database restart) must not crash the process: the
    // pool drops it and the next query opens a new one.
    this.pool.on('error', () => {});
  }

  /** One transaction: BEGIN, the locks, `fn`, COMMIT (ROLLBACK when `fn` throws). */
  async tx<T>(fn: (tx: Tx) => Promise<T>, locks: TxLocks = {}): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw pgError(error);
    }
    const sent: Promise<unknown>[] = [];
    const tx = clientTx(client, sent);
    let broken = false;
    try {
      // BEGIN and the locks in one round trip (a simple query of several statements; the ids are
      // quoted by the driver): every write's commit starts this way.
      const prologue = [locks.readOnly === true ? 'BEGIN READ ONLY' : 'BEGIN'];
      if (locks.access === true) prologue.push('SELECT pg_advisory_xact_lock(2, 0)');
      for (const projectId of [...new Set(locks.projects ?? [])].sort()) prologue.push(`SELECT pg_advisory_xact_lock(1, hashtext(${client.escapeLiteral(projectId)}))`);
      await client.query(prologue.join('; '));
      const result = await fn(tx);
      if (sent.length === 0) {
        await client.query('COMMIT');
      } else {
        sent.push(client.query('COMMIT'));
        for (const outcome of await Promise.allSettled(sent)) if (outcome.status === 'rejected') throw outcome.reason;
      }
      return result;
    } catch (error) {
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
      throw pgError(error);
    } finally {
      client.release(broken);
    }
  }

  /** A single statement outside an explicit transaction (reads). */
  async query<Row = Record<string, unknown>>(sql: Sql, params?: readonly unknown[]): Promise<Row[]> {
    try {
      const result = await this.pool.query(queryConfig(sql, params));
      return result.rows as Row[];
    } catch (error) {
      throw pgError(error);
    }
  }

  async one<Row = Record<string, unknown>>(sql: Sql, params?: readonly unknown[]): Promise<Row | undefined> {
    return (await this.query<Row>(sql, params))[0];
  }

  /**
   * Streams a query's rows in batches through a server-side cursor (gc's and fsck's hash lists can
   * be millions of rows: never all in memory). The client is held until the iteration ends.
   */
  async *stream<Row = Record<string, unknown>>(sql: string, params: readonly unknown[] = [], batch = 5000): AsyncIterable<Row> {
    const client = await this.pool.connect().catch((error: unknown) => {
      throw pgError(error);
    });
    // Finished: the cursor's transaction committed. Not finished (an error, or a consumer that left
    // the loop early): the client must not go back to the pool inside its READ ONLY transaction.
    let finished = false;
    try {
      await client.query('BEGIN READ ONLY');
      await client.query(`DECLARE strata_stream NO SCROLL CURSOR FOR ${sql}`, params as unknown[]);
      for (;;) {
        const { rows } = await client.query(`FETCH ${batch} FROM strata_stream`);
        for (const row of rows) yield row as Row;
        if (rows.length < batch) break;
      }
      await client.query('COMMIT');
      finished = true;
    } catch (error) {
      throw pgError(error);
    } finally {
      if (finished) {
        client.release();
      } else {
        const rolledBack = await client.query('ROLLBACK').then(
          () => true,
          () => false,
        );
        client.release(!rolledBack);
      }
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

function clientTx(client: pg.PoolClient, sent: Promise<unknown>[]): Tx {
  return {
    send<Row>(sql: Sql, params?: readonly unknown[]): Promise<Row[]> {
      const rows = client.query(queryConfig(sql, params)).then((result) => result.rows as Row[]);
      // Handled here: a transaction that fails before anyone reads these rows is no unhandled rejection.
      rows.catch(() => {});
      sent.push(rows);
      return rows;
    },
    async query<Row>(sql: Sql, params?: readonly unknown[]): Promise<Row[]> {
      const result = await client.query(queryConfig(sql, params));
      return result.rows as Row[];
    },
    async one<Row>(sql: Sql, params?: readonly unknown[]): Promise<Row | undefined> {
      const result = await client.query(queryConfig(sql, params));
      return result.rows[0] as Row | undefined;
    },
  };
}

/** What an operator most often meets at first start, said in words (the code stays in the message). */
const SQLSTATE_MEANINGS: Record<string, string> = {
  '28P01': 'password authentication failed',
  '28000': 'the server refused this user',
  '3D000': 'no such database',
  '3F000': 'no such schema',
  '42501': 'permission denied: the user needs CREATE on the schema for migrations',
  '53300': 'too many connections: lower the pool size or raise max_connections',
  '57P03': 'the database is starting up or shutting down',
};

/**
 * Postgres failures (connection refused, a constraint that signals a bug, a statement timeout) become
 * STORAGE_ERROR with the SQLSTATE in details; our own coded errors and TypeErrors pass through. The
 * message names the code only: a server's error text can quote row values.
 */
export function pgError(error: unknown): unknown {
  if (error instanceof StrataError || error instanceof TypeError) return error;
  if (error instanceof pg.DatabaseError) {
    const why = error.code === undefined ? undefined : SQLSTATE_MEANINGS[error.code];
    return new StrataError('STORAGE_ERROR', {
      message: `The metadata database failed: ${error.code ?? 'unknown'}${why === undefined ? '' : ` (${why})`}`,
      details: { sqlState: error.code },
      cause: error,
    });
  }
  if (error instanceof Error && 'code' in error && typeof error.code === 'string') {
    return new StrataError('STORAGE_ERROR', {
      message: `The metadata database is unreachable: ${error.code}`,
      details: { code: error.code },
      cause: error,
    });
  }
  const lost = error instanceof Error ? DRIVER_CONNECTION_ERRORS.get(error.message) : undefined;
  if (lost !== undefined) {
    return new StrataError('STORAGE_ERROR', {
      message: `The metadata database is unreachable: ${lost}`,
      details: { code: lost === 'timeout' ? 'TIMEOUT' : 'CONNECTION_LOST' },
      cause: error,
    });
  }
  return error;
}

/**
 * The driver's connection failures that carry no code (pg and pg-pool throw plain Errors for them),
 * so their exact texts are the only way to tell them from a bug. Without this a database behind a
 * proxy that stops answering made every request wait the connect timeout and then fail as INTERNAL,
 * and `strata serve` printed pg-pool's text as an internal error. The texts hold no URL or secret.
 */
const DRIVER_CONNECTION_ERRORS: ReadonlyMap<string, 'timeout' | 'connection lost'> = new Map([
  // pg-pool: a new connection did not finish its startup within connectionTimeoutMillis
  ['Connection terminated due to connection timeout', 'timeout'],
  // pg-pool: every pooled connection stayed busy for connectionTimeoutMillis
  ['timeout exceeded when trying to connect', 'timeout'],
  // pg Client: its own connect timer (connect_timeout) destroyed the socket
  ['timeout expired', 'timeout'],
  // pg Client: the server or a proxy closed the socket (a restart, a failover)
  ['Connection terminated unexpectedly', 'connection lost'],
  ['Client has encountered a connection error and is not queryable', 'connection lost'],
]);

/** SQLSTATE 23505: a unique constraint rejected the row (a concurrent insert of the same key won). */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const cause = error instanceof StrataError ? error.cause : error;
  return cause instanceof pg.DatabaseError && cause.code === '23505' && (constraint === undefined || cause.constraint === constraint);
}
