// `strata serve` on Postgres + S3 against the same server on SQLite + its home's object directory
// (issue 17), all in one run, side by side:
//   1. small writes: BENCH_SMALL_FILES (20,000) files of 1–4 KB (the files of small-writes.ts) over
//      HTTP, 16 concurrent keep-alive clients, one replica on Postgres + S3 vs one on SQLite + local;
//   2. the same with two replicas (two `strata serve` processes over the same Postgres schema and the
//      same bucket, the 16 clients split between them) vs one replica on Postgres + S3, with the p50 /
//      p99 request latency of each;
//   3. 4 × BENCH_LARGE_MIB (256) MiB uploaded through the server (PUT fs/write, 4 at once, streamed
//      from files on disk) on Postgres + S3, vs the same 4 files uploaded with the SDK alone
//      (@aws-sdk/lib-storage Upload, its defaults: 5 MiB parts, 4 at once) to the same kind of s3rver;
//   4. snapshot create and restore after 3 × 1 % changes on a BENCH_SNAPSHOT_FILES (100,000) file
//      project, in process (bench/snapshot-100k.ts's measurement), the engine on Postgres + the home's
//      object directory, vs the same on SQLite in this run (and the figures in docs/benchmarks.md).
// S3 is s3rver (test/helpers/s3-server.ts: a child process on loopback, its files on the same disk as
// the homes; it does not fsync). Postgres is this machine's (STRATA_TEST_DATABASE_URL, else
// postgres://postgres@127.0.0.1:5432/test; fsync and synchronous_commit as configured there). Every
// trial has a fresh home, its own schema (CREATE SCHEMA, dropped at the end of the trial, also on
// failure) and its own s3rver and directory. Rounds (BENCH_ROUNDS, 3) are interleaved, the order
// rotating. For each small-write trial, the CPU time of each process (this client, the server(s),
// s3rver, every `postgres` process of the machine) and Postgres's transaction and WAL counters
// (pg_stat_database, pg_stat_wal: machine-wide, so another user's load shows there too) say where the
// time went.
// Usage: node dist/bench/run.js server-storage   (BENCH_PARTS=small,large,snapshot to run some;
// BENCH_ONLY=sqlite,… to run some variants; BENCH_SNAPSHOT_WORST=1 adds the all-changed restores;
// BENCH_SPLIT=1 adds small-write variants on postgres+local and sqlite+s3, to see which half costs what)
import { randomBytes, randomFillSync } from 'node:crypto';
import { closeSync, createReadStream, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, statSync, writeSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import pg from 'pg';
import { createHasher } from '../engine/hash.js';
import { bootstrapHome } from '../server/bootstrap.js';
import { createTestSchema, TEST_DATABASE_URL, type TestSchema } from '../test/helpers/postgres.js';
import { BENCH_TMP, emptyTrash, freshDir, machineInfo, removeDir, selected, trash, writeResult } from './lib/env.js';
import { HttpClient, writePath } from './lib/http.js';
import { pseudoRandomBytes } from './lib/pool.js';
import { MiB, settleDisk } from './lib/proc.js';
import { type BenchS3Server, startBenchS3Server } from './lib/s3-server.js';
import { now, pairedSpeedup, percentile, round3, type Summary, seconds, summarize, type TargetCheck, target } from './lib/stats.js';
import { httpUnavailable, openBenchEngine, type ServerChild, startServerChild } from './lib/strata.js';
import { printTable, printTargets, spread } from './lib/table.js';
import { CHANGE, measureStrataSnapshots, FILES as SNAPSHOT_FILES, type StrataSnapshotSamples } from './snapshot-100k.js';

const SMALL_FILES = Number(process.env['BENCH_SMALL_FILES'] ?? 20_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const LARGE_BYTES = Number(process.env['BENCH_LARGE_MIB'] ?? 256) * MiB;
const LARGE_FILES = 4;
const CLIENTS = 16;
const PARTS = new Set((process.env['BENCH_PARTS'] ?? 'small,large,snapshot').split(',').map((p) => p.trim()));
const SNAPSHOT_WORST = process.env['BENCH_SNAPSHOT_WORST'] === '1';
const SPLIT = process.env['BENCH_SPLIT'] === '1';
/** docs/benchmarks.md, snapshot-100k on SQLite (run of 2026-11-22): what issue 17 compares with */
const DOCS_SQLITE_MS = { create: 301, restore: 458 };
const SNAPSHOT_TARGET_MS = 2000;
const MB = 1e6;
const CORES = cpus().length;

const smallFiles = Array.from({ length: SMALL_FILES }, (_, i) => {
  const size = 1024 + ((Math.imul(i + 1, 2654435761) >>> 0) % 3073); // 1,024–4,096 bytes, as small-writes.ts
  return { path: `src/d${String(i % 100).padStart(2, '0')}/file-${i}.txt`, content: pseudoRandomBytes(i + 1, size) };
});
const SMALL_BYTES = smallFiles.reduce((sum, f) => sum + f.content.length, 0);

// ---------------------------------------------------------------------------------------------
// Deployments: servers (child processes) on fresh storage

/** metadata + objects: the issue's two, and the mixed ones (BENCH_SPLIT=1) that say which half costs what */
type Backend = 'sqlite+local' | 'pg+s3' | 'pg+local' | 'sqlite+s3';

/** Server children still running: killed if this process exits without stopping them. */
const live = new Set<ServerChild>();
process.on('exit', () => {
  for (const server of live) {
    try {
      process.kill(server.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

interface Deployment {
  servers: ServerChild[];
  clients: HttpClient[];
  projectId: string;
  s3: BenchS3Server | null;
  /** stops the servers (their Postgres connections end, which flushes their statistics) */
  stopServers(): Promise<void>;
  /** everything: servers, s3rver and its directory, the schema, the homes */
  close(): Promise<void>;
}

/**
 * `replicas` servers on fresh storage: SQLite + the home's objects (one replica), or a new Postgres
 * schema + a new s3rver, each replica with a home of its own (scratch only), as in test/replicas.test.ts.
 * The homes and s3rver's files are moved aside (env.ts, trash) when `manyFiles`, else deleted.
 */
async function deploy(name: string, backend: Backend, replicas: number, manyFiles: boolean): Promise<Deployment> {
  const dir = freshDir(`server-storage-${name}`);
  const servers: ServerChild[] = [];
  const clients: HttpClient[] = [];
  let schema: TestSchema | null = null;
  let s3: BenchS3Server | null = null;
  const stopServers = async () => {
    for (const client of clients.splice(0)) client.close();
    await Promise.all(
      servers.splice(0).map(async (server) => {
        await server.close();
        live.delete(server);
      }),
    );
  };
  const close = async () => {
    const errors: unknown[] = [];
    const step = async (fn: () => unknown) => {
      try {
        await fn();
      } catch (error) {
        errors.push(error);
      }
    };
    await step(stopServers);
    // Moved aside before s3rver's close deletes its directory (then already gone): see trash().
    await step(() => (manyFiles ? trash(dir) : removeDir(dir)));
    if (s3 !== null) await step(() => s3!.close());
    if (schema !== null) await step(() => schema!.drop());
    if (errors.length > 0) throw errors[0];
  };
  try {
    let env: NodeJS.ProcessEnv = { STRATA_RATE_LIMIT: 'off' };
    if (backend.startsWith('pg+')) {
      schema = await createTestSchema('strata_bench');
      env = { ...env, STRATA_DATABASE_URL: schema.url, STRATA_PEPPER: randomBytes(32).toString('hex') };
    }
    if (backend.endsWith('+s3')) {
      s3 = await startBenchS3Server(join(dir, 's3'));
      env = { ...env, STRATA_OBJECTS_URL: s3.url, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey };
    }
    if (backend !== 'pg+s3' && replicas !== 1) throw new TypeError(`a server on ${backend} has one replica`);
    const { apiKey } = await bootstrapHome({ home: join(dir, 'home-0'), env: { ...process.env, ...env } });
    const started = await Promise.allSettled(Array.from({ length: replicas }, (_, n) => startServerChild(join(dir, `home-${n}`), { env })));
    for (const result of started) {
      if (result.status === 'fulfilled') {
        servers.push(result.value);
        live.add(result.value);
      }
    }
    const failed = started.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    clients.push(...servers.map((server) => new HttpClient(server.url, apiKey, CLIENTS)));
    const project = await clients[0]!.json<{ projectId: string }>('POST', '/v1/projects', { name: 'bench' });
    return { servers: [...servers], clients: [...clients], projectId: project.projectId, s3, stopServers, close };
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Where the time goes: CPU seconds per process, Postgres's counters

function cpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in USER_HZ (100)
  } catch {
    return null;
  }
}

/** CPU seconds of every process named `postgres` (server, backends, walwriter, …), by pid. */
function postgresCpu(): Map<number, number> {
  const cpu = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== 'postgres') continue;
      const value = cpuSeconds(Number(name));
      if (value !== null) cpu.set(Number(name), value);
    } catch {
      // gone meanwhile
    }
  }
  return cpu;
}

interface CpuMark {
  client: number;
  servers: number[];
  s3rver: number | null;
  postgres: Map<number, number>;
}

interface CpuSplit {
  /** CPU seconds during the trial */
  client: number;
  server: number;
  s3rver: number;
  /** every postgres process of the machine (backends that exited meanwhile are not counted) */
  postgres: number;
}

function cpuMark(deployment: { servers: ServerChild[]; s3: BenchS3Server | null }): CpuMark {
  const usage = process.cpuUsage();
  return {
    client: (usage.user + usage.system) / 1e6,
    servers: deployment.servers.map((s) => cpuSeconds(s.pid) ?? 0),
    s3rver: deployment.s3?.pid == null ? null : cpuSeconds(deployment.s3.pid),
    postgres: postgresCpu(),
  };
}

function cpuSplit(before: CpuMark, after: CpuMark): CpuSplit {
  let postgres = 0;
  for (const [pid, value] of after.postgres) postgres += value - (before.postgres.get(pid) ?? 0);
  return {
    client: after.client - before.client,
    server: after.servers.reduce((sum, v, i) => sum + v - before.servers[i]!, 0),
    s3rver: after.s3rver === null || before.s3rver === null ? 0 : after.s3rver - before.s3rver,
    postgres,
  };
}

interface PgCounters {
  transactions: number;
  walRecords: number;
  walBytes: number;
  walSyncs: number;
}

/** This database's committed + rolled back transactions and the cluster's WAL counters, from a fresh connection. */
async function pgCounters(): Promise<PgCounters> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    const db = await client.query<{ xacts: string }>('SELECT xact_commit + xact_rollback AS xacts FROM pg_stat_database WHERE datname = current_database()');
    const wal = await client.query<{ wal_records: string; wal_bytes: string; wal_sync: string }>('SELECT wal_records, wal_bytes, wal_sync FROM pg_stat_wal');
    return {
      transactions: Number(db.rows[0]!.xacts),
      walRecords: Number(wal.rows[0]!.wal_records),
      walBytes: Number(wal.rows[0]!.wal_bytes),
      walSyncs: Number(wal.rows[0]!.wal_sync),
    };
  } finally {
    await client.end();
  }
}

// ---------------------------------------------------------------------------------------------
// 1 + 2: small writes

type SmallVariant = 'sqlite+local, 1 replica' | 'postgres+s3, 1 replica' | 'postgres+s3, 2 replicas' | 'postgres+local, 1 replica' | 'sqlite+s3, 1 replica';
const SMALL_VARIANTS: Array<{ variant: SmallVariant; backend: Backend; replicas: number }> = [
  { variant: 'sqlite+local, 1 replica', backend: 'sqlite+local', replicas: 1 },
  { variant: 'postgres+s3, 1 replica', backend: 'pg+s3', replicas: 1 },
  { variant: 'postgres+s3, 2 replicas', backend: 'pg+s3', replicas: 2 },
  // Context, not in issue 17: each half alone (BENCH_SPLIT=1).
  ...(SPLIT
    ? [
        { variant: 'postgres+local, 1 replica' as const, backend: 'pg+local' as const, replicas: 1 },
        { variant: 'sqlite+s3, 1 replica' as const, backend: 'sqlite+s3' as const, replicas: 1 },
      ]
    : []),
];

interface SmallTrial {
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  cpu: CpuSplit;
  /** Postgres counters during the trial (and the servers' shutdown), per write; null on SQLite */
  pgPerWrite: PgCounters | null;
}

async function smallTrial(backend: Backend, replicas: number): Promise<SmallTrial> {
  const deployment = await deploy('small', backend, replicas, true);
  try {
    await settleDisk();
    const latencies = new Float64Array(SMALL_FILES);
    const pg0 = backend.startsWith('pg+') ? await pgCounters() : null;
    const cpu0 = cpuMark(deployment);
    const start = now();
    let next = 0;
    // 16 clients, each a loop of one request at a time; client w talks to replica w mod replicas.
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, w) => {
        const client = deployment.clients[w % deployment.clients.length]!;
        while (next < SMALL_FILES) {
          const i = next++;
          const f = smallFiles[i]!;
          const sent = performance.now();
          const { version } = await client.json<{ version: { size: number } }>('PUT', writePath(deployment.projectId, f.path), f.content);
          latencies[i] = performance.now() - sent;
          if (version.size !== f.content.length) throw new Error(`${f.path}: stored ${version.size} bytes`);
        }
      }),
    );
    const elapsed = seconds(start);
    const cpu = cpuSplit(cpu0, cpuMark(deployment));
    await deployment.stopServers();
    let pgPerWrite: PgCounters | null = null;
    if (pg0 !== null) {
      const pg1 = await pgCounters();
      pgPerWrite = {
        transactions: round3((pg1.transactions - pg0.transactions) / SMALL_FILES),
        walRecords: round3((pg1.walRecords - pg0.walRecords) / SMALL_FILES),
        walBytes: Math.round((pg1.walBytes - pg0.walBytes) / SMALL_FILES),
        walSyncs: round3((pg1.walSyncs - pg0.walSyncs) / SMALL_FILES),
      };
    }
    const sorted = [...latencies].sort((a, b) => a - b);
    return { seconds: elapsed, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), maxMs: sorted.at(-1)!, cpu, pgPerWrite };
  } finally {
    await deployment.close();
  }
}

// ---------------------------------------------------------------------------------------------
// 3: large uploads

type LargeVariant = 'server PUT fs/write, one object each' | 'server PUT fs/write, datasets' | 'server PUT sync/objects (hash known)' | 'SDK lib-storage Upload';
const LARGE_VARIANTS: LargeVariant[] = [
  'server PUT fs/write, one object each',
  'server PUT fs/write, datasets',
  'server PUT sync/objects (hash known)',
  'SDK lib-storage Upload',
];
const LARGE_SRC = join(BENCH_TMP, 'server-storage-src');
const largeSources = Array.from({ length: LARGE_FILES }, (_, i) => join(LARGE_SRC, `file-${i}.bin`));

interface LargeTrial {
  seconds: number;
  /** the stored versions' dataset flags (server variants) */
  dataset?: boolean[];
  serverPeakRss?: number;
  /** CPU seconds of each process during the upload (postgres: every postgres process of the machine) */
  cpu: CpuSplit;
}

function ensureLargeSources(): void {
  mkdirSync(LARGE_SRC, { recursive: true });
  const chunk = Buffer.allocUnsafe(MiB);
  for (const file of largeSources) {
    if (existsSync(file) && statSync(file).size === LARGE_BYTES) continue;
    const fd = openSync(file, 'w');
    for (let written = 0; written < LARGE_BYTES; written += chunk.length) writeSync(fd, randomFillSync(chunk), 0, Math.min(chunk.length, LARGE_BYTES - written));
    fsyncSync(fd);
    closeSync(fd);
  }
}

/** Read (untimed) right before each trial, so every variant reads the sources from the page cache (see ingest-large.ts). */
function warmLargeSources(): void {
  const buffer = Buffer.allocUnsafe(MiB);
  for (const file of largeSources) {
    const fd = openSync(file, 'r');
    while (readSync(fd, buffer, 0, buffer.length, null) > 0);
    closeSync(fd);
  }
}

async function largeServerTrial(datasets: boolean): Promise<LargeTrial> {
  const deployment = await deploy('large', 'pg+s3', 1, false);
  try {
    const client = deployment.clients[0]!;
    // The project's threshold decides (engine/datasets/rules.ts: a file larger than it is a dataset
    // whatever its name; the name only matters for tracked patterns, and none are tracked here).
    // One object: the threshold raised to the file size. Datasets: the default 64 MiB, or 0 when
    // the files are smaller than that (a smoke run), so that they are datasets all the same.
    const thresholdBytes = datasets ? (LARGE_BYTES > 64 * MiB ? null : 0) : LARGE_BYTES;
    if (thresholdBytes !== null) await client.json('POST', `/v1/projects/${deployment.projectId}/fs/datasets/threshold`, { thresholdBytes });
    warmLargeSources();
    await settleDisk();
    const cpu0 = cpuMark(deployment);
    const start = now();
    const written = await Promise.all(
      largeSources.map((file, i) => client.json<{ version: { size: number; dataset: boolean } }>('PUT', writePath(deployment.projectId, `data/file-${i}.bin`), { file })),
    );
    const elapsed = seconds(start);
    const cpu = cpuSplit(cpu0, cpuMark(deployment));
    for (const w of written) if (w.version.size !== LARGE_BYTES) throw new Error(`stored ${w.version.size} bytes, not ${LARGE_BYTES}`);
    const dataset = written.map((w) => w.version.dataset);
    if (dataset.some((d) => d !== datasets)) throw new Error(`expected ${datasets ? 'datasets' : 'one object each'}, got dataset flags ${dataset.join(',')}`);
    const hwm = deployment.servers[0]!.peakRss();
    return { seconds: elapsed, dataset, cpu, ...(hwm === null ? {} : { serverPeakRss: hwm }) };
  } finally {
    await deployment.close();
  }
}

/**
 * A workstation's upload (sync): the daemon knows each file's hash from capturing it, and sends the
 * bytes to PUT sync/objects/HASH. With the hash known the server streams straight to the object's final
 * key (a multipart upload completed only if the bytes hash to it): no temporary key, no server-side copy.
 * The hashes are computed before the timed part, as the daemon computed them when it versioned the files.
 */
async function largeSyncObjectsTrial(): Promise<LargeTrial> {
  const hashes = largeSources.map((file) => {
    const hasher = createHasher();
    const buffer = Buffer.allocUnsafe(MiB);
    const fd = openSync(file, 'r');
    for (let n = readSync(fd, buffer, 0, buffer.length, null); n > 0; n = readSync(fd, buffer, 0, buffer.length, null)) hasher.update(buffer.subarray(0, n));
    closeSync(fd);
    return hasher.digest();
  });
  const deployment = await deploy('large', 'pg+s3', 1, false);
  try {
    const client = deployment.clients[0]!;
    warmLargeSources();
    await settleDisk();
    const cpu0 = cpuMark(deployment);
    const start = now();
    await Promise.all(largeSources.map((file, i) => client.json('PUT', `/v1/projects/${deployment.projectId}/sync/objects/${hashes[i]}`, { file })));
    const elapsed = seconds(start);
    const cpu = cpuSplit(cpu0, cpuMark(deployment));
    const hwm = deployment.servers[0]!.peakRss();
    return { seconds: elapsed, cpu, ...(hwm === null ? {} : { serverPeakRss: hwm }) };
  } finally {
    await deployment.close();
  }
}

async function largeSdkTrial(): Promise<LargeTrial> {
  const dir = freshDir('server-storage-large-sdk');
  const s3 = await startBenchS3Server(dir);
  const client = new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
  try {
    warmLargeSources();
    await settleDisk();
    const cpu0 = cpuMark({ servers: [], s3 });
    const start = now();
    await Promise.all(
      largeSources.map((file, i) =>
        new Upload({ client, params: { Bucket: s3.bucket, Key: `plain/file-${i}.bin`, Body: createReadStream(file, { highWaterMark: MiB }) } }).done(),
      ),
    );
    const elapsed = seconds(start);
    return { seconds: elapsed, cpu: cpuSplit(cpu0, cpuMark({ servers: [], s3 })) };
  } finally {
    client.destroy();
    await s3.close();
    removeDir(dir);
  }
}

// ---------------------------------------------------------------------------------------------
// 4: snapshots

async function snapshotOn(backend: 'postgres' | 'sqlite'): Promise<StrataSnapshotSamples> {
  const home = freshDir(`server-storage-snapshot-${backend}`);
  let schema: TestSchema | null = null;
  try {
    let env: NodeJS.ProcessEnv | undefined;
    if (backend === 'postgres') {
      schema = await createTestSchema('strata_bench');
      env = { STRATA_DATABASE_URL: schema.url };
    }
    const bench = await openBenchEngine(home, undefined, env === undefined ? {} : { env });
    try {
      return await measureStrataSnapshots(bench, { rounds: ROUNDS, worstCase: SNAPSHOT_WORST, log: (line) => console.log(`  [${backend}]${line.slice(1)}`) });
    } finally {
      await bench.local.close();
    }
  } finally {
    trash(home);
    await schema?.drop();
  }
}

// ---------------------------------------------------------------------------------------------

const usPerWrite = (cpuSecondsTotal: number) => Math.round((cpuSecondsTotal / SMALL_FILES) * 1e6);
const ms = (values: number[]): Summary => summarize(values.map((s) => s * 1000));

async function main(): Promise<void> {
  const started = Date.now();
  const machine = machineInfo();
  const httpReason = httpUnavailable();
  if (httpReason !== null && (PARTS.has('small') || PARTS.has('large'))) throw new Error(`server-storage needs the server: ${httpReason}`);
  console.log(
    `server-storage: ${SMALL_FILES} small files (${(SMALL_BYTES / 1e6).toFixed(1)} MB), ${LARGE_FILES} × ${LARGE_BYTES / MiB} MiB, ` +
      `${SNAPSHOT_FILES}-file snapshots, ${ROUNDS} rounds, parts ${[...PARTS].join(',')}, scratch ${BENCH_TMP}, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`,
  );
  const targets: TargetCheck[] = [];
  const result: Record<string, unknown> = {
    benchmark: 'server-storage',
    machine,
    params: {
      smallFiles: SMALL_FILES,
      smallBytes: SMALL_BYTES,
      clients: CLIENTS,
      largeFiles: LARGE_FILES,
      largeBytes: LARGE_BYTES,
      snapshotFiles: SNAPSHOT_FILES,
      rounds: ROUNDS,
      parts: [...PARTS],
      database: TEST_DATABASE_URL,
      objects: 's3rver 3.7 in a child process on 127.0.0.1 (no fsync)',
    },
  };
  const loads: Record<string, number> = {};
  try {
    // 1 + 2: small writes, rounds interleaved.
    if (PARTS.has('small')) {
      loads['small'] = round3(loadavg()[0]!);
      const samples = new Map<SmallVariant, SmallTrial[]>(SMALL_VARIANTS.map((v) => [v.variant, []]));
      for (let round = 0; round < ROUNDS; round++) {
        for (let k = 0; k < SMALL_VARIANTS.length; k++) {
          const { variant, backend, replicas } = SMALL_VARIANTS[(k + round) % SMALL_VARIANTS.length]!;
          if (!selected(variant)) continue;
          const trial = await smallTrial(backend, replicas);
          samples.get(variant)!.push(trial);
          const c = trial.cpu;
          console.log(
            `  round ${round + 1} ${variant}: ${trial.seconds.toFixed(2)} s, ${(SMALL_FILES / trial.seconds).toFixed(0)} writes/s, ` +
              `p50 ${trial.p50Ms.toFixed(1)} ms, p99 ${trial.p99Ms.toFixed(1)} ms; CPU µs/write client ${usPerWrite(c.client)} server ${usPerWrite(c.server)} ` +
              `s3rver ${usPerWrite(c.s3rver)} postgres ${usPerWrite(c.postgres)}` +
              (trial.pgPerWrite === null ? '' : `; per write ${trial.pgPerWrite.transactions} pg transactions, ${trial.pgPerWrite.walSyncs} WAL syncs, ${trial.pgPerWrite.walBytes} WAL bytes`),
          );
        }
      }
      emptyTrash();
      const secondsOf = (v: SmallVariant) => samples.get(v)!.map((t) => t.seconds);
      const rows = [...samples]
        .filter(([, trials]) => trials.length > 0)
        .map(([variant, trials]) => {
          const perSecond = summarize(trials.map((t) => SMALL_FILES / t.seconds));
          const cpu = (pick: (c: CpuSplit) => number) => summarize(trials.map((t) => usPerWrite(pick(t.cpu))));
          return {
            variant,
            seconds: summarize(trials.map((t) => t.seconds)),
            perSecond,
            p50Ms: summarize(trials.map((t) => t.p50Ms)),
            p99Ms: summarize(trials.map((t) => t.p99Ms)),
            maxMs: summarize(trials.map((t) => t.maxMs)),
            vsSqlite: pairedSpeedup(secondsOf(variant), secondsOf('sqlite+local, 1 replica')),
            vsPgOneReplica: pairedSpeedup(secondsOf(variant), secondsOf('postgres+s3, 1 replica')),
            cpuUsPerWrite: {
              client: cpu((c) => c.client),
              server: cpu((c) => c.server),
              s3rver: cpu((c) => c.s3rver),
              postgres: cpu((c) => c.postgres),
              total: cpu((c) => c.client + c.server + c.s3rver + c.postgres),
            },
            /** CPU used ÷ (wall time × cores): near 1, the machine's CPU is the limit */
            cpuBusy: summarize(trials.map((t) => round3((t.cpu.client + t.cpu.server + t.cpu.s3rver + t.cpu.postgres) / (t.seconds * CORES)))),
            pgPerWrite: trials[0]!.pgPerWrite === null ? null : trials.map((t) => t.pgPerWrite!),
          };
        });
      printTable(
        `Small writes: ${SMALL_FILES} files of 1–4 KB over HTTP, ${CLIENTS} keep-alive clients; median (min–max) of ${ROUNDS}; ratios round by round`,
        ['variant', 'seconds', 'writes/s', 'p50 ms', 'p99 ms', 'vs sqlite', 'vs pg 1 replica'],
        rows.map((r) => [r.variant, spread(r.seconds), spread(r.perSecond), spread(r.p50Ms), spread(r.p99Ms), r.vsSqlite ? spread(r.vsSqlite) : '', r.vsPgOneReplica ? spread(r.vsPgOneReplica) : '']),
      );
      printTable(
        `Where the time goes: CPU µs per write (median of rounds; postgres = every postgres process of the machine), CPU busy = CPU ÷ (wall × ${CORES} cores)`,
        ['variant', 'client', 'server(s)', 's3rver', 'postgres', 'total', 'CPU busy', 'pg xacts/write', 'WAL syncs/write'],
        rows.map((r) => {
          const pgMedian = (pick: (c: PgCounters) => number) => (r.pgPerWrite === null ? '' : summarize(r.pgPerWrite.map(pick)).median);
          return [
            r.variant,
            r.cpuUsPerWrite.client.median,
            r.cpuUsPerWrite.server.median,
            r.cpuUsPerWrite.s3rver.median,
            r.cpuUsPerWrite.postgres.median,
            r.cpuUsPerWrite.total.median,
            r.cpuBusy.median,
            pgMedian((c) => c.transactions),
            pgMedian((c) => c.walSyncs),
          ];
        }),
      );
      const row = (v: SmallVariant) => rows.find((r) => r.variant === v);
      const pg1 = row('postgres+s3, 1 replica');
      const pg2 = row('postgres+s3, 2 replicas');
      const sqlite = row('sqlite+local, 1 replica');
      if (pg1 && sqlite) targets.push(target('small writes: postgres+s3 ÷ sqlite+local writes/s (1 replica, per round)', pg1.vsSqlite?.median ?? Number.NaN, '>=', 0.5, '×'));
      if (pg1 && pg2) targets.push(target('small writes: 2 replicas ÷ 1 replica writes/s (postgres+s3, per round)', pg2.vsPgOneReplica?.median ?? Number.NaN, '>=', 1, '×'));
      result['smallWrites'] = { loadAverage1m: loads['small'], variants: rows };
    }

    // 3: large uploads, rounds interleaved.
    if (PARTS.has('large')) {
      loads['large'] = round3(loadavg()[0]!);
      ensureLargeSources();
      const samples = new Map<LargeVariant, LargeTrial[]>(LARGE_VARIANTS.map((v) => [v, []]));
      const run: Record<LargeVariant, () => Promise<LargeTrial>> = {
        'server PUT fs/write, one object each': () => largeServerTrial(false),
        'server PUT fs/write, datasets': () => largeServerTrial(true),
        'server PUT sync/objects (hash known)': largeSyncObjectsTrial,
        'SDK lib-storage Upload': largeSdkTrial,
      };
      for (let round = 0; round < ROUNDS; round++) {
        for (let k = 0; k < LARGE_VARIANTS.length; k++) {
          const variant = LARGE_VARIANTS[(k + round) % LARGE_VARIANTS.length]!;
          if (!selected(variant)) continue;
          const trial = await run[variant]();
          samples.get(variant)!.push(trial);
          const rss = trial.serverPeakRss === undefined ? '' : `, server peak RSS ${(trial.serverPeakRss / MiB).toFixed(0)} MiB`;
          const c = trial.cpu;
          console.log(
            `  round ${round + 1} ${variant}: ${trial.seconds.toFixed(2)} s, ${((LARGE_FILES * LARGE_BYTES) / MB / trial.seconds).toFixed(0)} MB/s${rss}; ` +
              `CPU s client ${c.client.toFixed(1)} server ${c.server.toFixed(1)} s3rver ${c.s3rver.toFixed(1)} postgres ${c.postgres.toFixed(1)}`,
          );
        }
      }
      removeDir(LARGE_SRC);
      const secondsOf = (v: LargeVariant) => samples.get(v)!.map((t) => t.seconds);
      const rows = [...samples]
        .filter(([, trials]) => trials.length > 0)
        .map(([variant, trials]) => ({
          variant,
          seconds: summarize(trials.map((t) => t.seconds)),
          mbPerSecond: summarize(trials.map((t) => (LARGE_FILES * LARGE_BYTES) / MB / t.seconds)),
          vsSdk: pairedSpeedup(secondsOf(variant), secondsOf('SDK lib-storage Upload')),
          serverPeakRssMiB: trials[0]!.serverPeakRss === undefined ? null : summarize(trials.map((t) => (t.serverPeakRss ?? 0) / MiB)),
          cpuSeconds: {
            client: summarize(trials.map((t) => t.cpu.client)),
            server: summarize(trials.map((t) => t.cpu.server)),
            s3rver: summarize(trials.map((t) => t.cpu.s3rver)),
            postgres: summarize(trials.map((t) => t.cpu.postgres)),
          },
          cpuBusy: summarize(trials.map((t) => round3((t.cpu.client + t.cpu.server + t.cpu.s3rver + t.cpu.postgres) / (t.seconds * CORES)))),
          dataset: trials[0]!.dataset ?? null,
        }));
      printTable(
        `Large uploads: ${LARGE_FILES} × ${LARGE_BYTES / MiB} MiB at once to s3rver (server: postgres+s3, 1 replica); median (min–max) of ${ROUNDS}`,
        ['variant', 'seconds', 'MB/s', 'vs SDK (per round)', 'server peak RSS MiB', 'CPU s: client', 'server', 's3rver', 'CPU busy'],
        rows.map((r) => [
          r.variant,
          spread(r.seconds),
          spread(r.mbPerSecond),
          r.vsSdk ? spread(r.vsSdk) : '',
          r.serverPeakRssMiB ? spread(r.serverPeakRssMiB) : '',
          r.cpuSeconds.client.median,
          r.cpuSeconds.server.median,
          r.cpuSeconds.s3rver.median,
          r.cpuBusy.median,
        ]),
      );
      const oneObject = rows.find((r) => r.variant === 'server PUT fs/write, one object each');
      const datasets = rows.find((r) => r.variant === 'server PUT fs/write, datasets');
      if (oneObject?.vsSdk) targets.push(target('large upload, one object each: server ÷ SDK MB/s (per round)', oneObject.vsSdk.median, '>=', 0.8, '×'));
      if (datasets?.vsSdk) targets.push(target('large upload, datasets (default rules): server ÷ SDK MB/s (per round)', datasets.vsSdk.median, '>=', 0.8, '×'));
      const synced = rows.find((r) => r.variant === 'server PUT sync/objects (hash known)');
      if (synced?.vsSdk) targets.push(target("large upload, a workstation's sync (hash known): server ÷ SDK MB/s (per round)", synced.vsSdk.median, '>=', 0.8, '×'));
      result['largeUploads'] = { loadAverage1m: loads['large'], variants: rows };
    }

    // 4: snapshots of a 100,000-file project, in process.
    if (PARTS.has('snapshot')) {
      loads['snapshot'] = round3(loadavg()[0]!);
      const runs: Partial<Record<'postgres' | 'sqlite', StrataSnapshotSamples>> = {};
      for (const backend of ['postgres', 'sqlite'] as const) {
        if (!selected(backend)) continue;
        runs[backend] = await snapshotOn(backend);
      }
      emptyTrash();
      const summary = (s: StrataSnapshotSamples | undefined) =>
        s === undefined
          ? null
          : {
              setupVersionsPerSecond: Math.round(SNAPSHOT_FILES / s.setupSeconds),
              /** the first create pins the whole tree; later ones (nothing changed since) cost little */
              firstCreateMs: round3(s.createSamples[0]! * 1000),
              createMs: ms(s.createSamples),
              restoreMs: ms(s.restoreSamples.map((r) => r.seconds)),
              worstCaseRestoreMs: s.worstSamples.length === 0 ? null : ms(s.worstSamples.map((r) => r.seconds)),
              restores: [...s.restoreSamples, ...s.worstSamples],
            };
      const pgS = summary(runs.postgres);
      const sqliteS = summary(runs.sqlite);
      const cell = (s: Summary | null | undefined) => (s ? spread(s) : '');
      const ratio = (a: Summary | null | undefined, b: Summary | null | undefined) => (a && b ? (a.median / b.median).toFixed(2) : '');
      const tableRows: Array<Array<string | number>> = [
        [
          `first snapshot create (all ${SNAPSHOT_FILES} files new)`,
          pgS?.firstCreateMs ?? '',
          sqliteS?.firstCreateMs ?? '',
          DOCS_SQLITE_MS.create,
          pgS && sqliteS ? (pgS.firstCreateMs / sqliteS.firstCreateMs).toFixed(2) : '',
        ],
        ['snapshot create, all rounds', cell(pgS?.createMs), cell(sqliteS?.createMs), DOCS_SQLITE_MS.create, ratio(pgS?.createMs, sqliteS?.createMs)],
        [`restore after ${CHANGE}/${CHANGE}/${CHANGE} mod/del/add`, cell(pgS?.restoreMs), cell(sqliteS?.restoreMs), DOCS_SQLITE_MS.restore, ratio(pgS?.restoreMs, sqliteS?.restoreMs)],
      ];
      if (SNAPSHOT_WORST) tableRows.push([`restore after all ${SNAPSHOT_FILES} changed`, cell(pgS?.worstCaseRestoreMs), cell(sqliteS?.worstCaseRestoreMs), 3838, ratio(pgS?.worstCaseRestoreMs, sqliteS?.worstCaseRestoreMs)]);
      printTable(`Snapshots of a ${SNAPSHOT_FILES}-file project, in process, ms, median (min–max) of ${ROUNDS}`, ['operation', 'postgres', 'sqlite (this run)', 'sqlite (docs, 100k files)', 'pg ÷ sqlite'], tableRows);
      console.log(
        `  setup: ${SNAPSHOT_FILES} writes, postgres ${pgS?.setupVersionsPerSecond ?? '-'} versions/s, sqlite ${sqliteS?.setupVersionsPerSecond ?? '-'} versions/s (in process, 512 in flight)`,
      );
      if (pgS) {
        // The first create, not the median: the later ones find nothing changed and cost ~10× less.
        targets.push(target(`first snapshot create on postgres, ${SNAPSHOT_FILES} files (ms)`, pgS.firstCreateMs, '<=', SNAPSHOT_TARGET_MS, ' ms'));
        targets.push(target(`snapshot restore on postgres after ${CHANGE * 3} changes (ms)`, pgS.restoreMs.median, '<=', SNAPSHOT_TARGET_MS, ' ms'));
        targets.push(target('content bytes added by any restore on postgres', Math.max(...pgS.restores.map((r) => r.bytesAdded)), '<=', 0));
      }
      result['snapshots'] = { loadAverage1m: loads['snapshot'], docsSqliteMs: DOCS_SQLITE_MS, postgres: pgS, sqlite: sqliteS };
    }
  } finally {
    emptyTrash();
    removeDir(LARGE_SRC);
  }

  if (targets.length > 0) printTargets(targets);
  const durationSeconds = Math.round((Date.now() - started) / 1000);
  console.log(`\nload average (1 min) at the start of each part: ${Object.entries(loads).map(([part, load]) => `${part} ${load}`).join(', ')}; total ${durationSeconds} s`);
  const file = writeResult('server-storage', { ...result, loadAverage1mByPart: loads, durationSeconds, targets });
  console.log(`\nresult: ${file}`);
}

await main();
