// Two replicas' content stores over one bucket and one Postgres (each its own connection pool, as
// separate processes have): a collector on one never deletes what the other is writing or has just
// deduplicated against (engine/ports/object-guard.ts, engine/storage/pg-object-guard.ts). Every
// scene runs twice: objects in the bucket, and small objects as rows of Postgres (pg-small-objects.ts).

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ContentStore } from '../engine/ports/content-store.js';
import type { ObjectGuard } from '../engine/ports/object-guard.js';
import { createPgObjectGuard } from '../engine/storage/pg-object-guard.js';
import { openPgRepository, type PgRepository } from '../engine/storage/pg-repository.js';
import { withSmallObjectsInPostgres } from '../engine/storage/pg-small-objects.js';
import { openS3ContentStore } from '../engine/storage/s3-content-store.js';
import { commitAll, recordMaker } from './conformance/metadata-repository-fixtures.js';
import { adminQuery, createTestSchema, type TestSchema } from './helpers/postgres.js';
import { startS3Server, type TestS3Server } from './helpers/s3-server.js';

interface Replica {
  repository: PgRepository;
  guard: ObjectGuard;
  /** every object in the bucket */
  bucket: ContentStore;
  /** the same bucket, objects up to 64 KiB in Postgres (what a server runs) */
  tiered: ContentStore;
}

let schema: TestSchema;
let s3: TestS3Server;
const replicas: Replica[] = [];

async function openReplica(): Promise<Replica> {
  const repository = await openPgRepository({ url: schema.url, max: 3 });
  const guard = createPgObjectGuard(repository.db);
  const store = await openS3ContentStore({
    bucket: s3.bucket,
    endpoint: s3.endpoint,
    region: s3.region,
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    guard,
  });
  const tiered = withSmallObjectsInPostgres({ db: repository.db, large: store, guard, maxBytes: 64 * 1024 });
  return { repository, guard, bucket: store, tiered };
}

async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

beforeAll(async () => {
  schema = await createTestSchema('strata_guard');
  s3 = await startS3Server();
  replicas.push(await openReplica(), await openReplica());
}, 60_000);

afterAll(async () => {
  for (const replica of replicas) {
    await replica.bucket.close();
    await replica.repository.close();
  }
  await s3?.close();
  await schema?.drop();
});

describe.each([
  ['every object in the bucket', (replica: Replica) => replica.bucket, 'ab'],
  ['small objects in Postgres', (replica: Replica) => replica.tiered, 'cd'],
] as const)('replicas sharing a bucket: %s', (_name, storeOf, hashByte) => {
  const replica = (i: number) => {
    const r = replicas[i]!;
    return { ...r, store: storeOf(r) };
  };
  it('a collector spares what another replica touched within the grace period, and takes it afterwards', async () => {
    const [a, b] = [replica(0), replica(1)];
    const content = Buffer.from('written by replica a\n');
    const { hash } = await a.store.putBuffer(content);
    // B looks at it with a grace period the touch is inside of: spared.
    expect(await b.store.collect!(hash, 60_000)).toBe(false);
    expect(await a.store.has(hash)).toBe(true);
    // A deduplicates against it again later: that is a touch too.
    expect((await a.store.putBuffer(content)).created).toBe(false);
    expect(await b.store.collect!(hash, 60_000)).toBe(false);
    // Past the grace period (0 here) and referenced by nothing: collected.
    expect(await b.store.collect!(hash, 0)).toBe(true);
    expect(await a.store.has(hash)).toBe(false);
  });

  it('a touch says which hashes it had no record of: new content skips the existence check', async () => {
    const [a, b] = [replica(0), replica(1)];
    const hash = `blake3:${hashByte.repeat(32)}` as const;
    expect(await a.guard.touch([hash, hash])).toStrictEqual(new Set([hash]));
    expect(await b.guard.touch([hash])).toStrictEqual(new Set());
    expect(await b.guard.collect(hash, 0, async () => {})).toBe(true);
    expect(await a.guard.touch([hash])).toStrictEqual(new Set([hash]));
    // Content stored without a guard (a storage migration) is stored again by the first guarded put: same bytes.
    const content = Buffer.from('migrated without a guard\n');
    const unguarded = await openS3ContentStore({ bucket: s3.bucket, endpoint: s3.endpoint, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey });
    try {
      const { hash: migrated } = await unguarded.putBuffer(content);
      expect((await a.store.putBuffer(content)).hash).toBe(migrated);
      expect((await b.store.readBuffer(migrated)).equals(content)).toBe(true);
    } finally {
      await unguarded.close();
    }
  });

  it('never collects what a version references, however old its touch', async () => {
    const [a, b] = [replica(0), replica(1)];
    const make = recordMaker();
    const { hash } = await a.store.putBuffer(Buffer.from('referenced'));
    // Its own version id in each scene (the maker counts from 1 in each).
    await commitAll(a.repository, [{ ...make.write(`kept-${hashByte}.txt`, 'referenced', { contentHash: hash }), versionId: randomUUID() }]);
    expect(await b.store.collect!(hash, 0)).toBe(false);
    expect(await b.store.has(hash)).toBe(true);
  });

  it('a write that comes while another replica deletes the object waits for it, finds it gone and stores it again', async () => {
    const [a, b] = [replica(0), replica(1)];
    const content = Buffer.from('raced between two replicas\n');
    const { hash } = await a.store.putBuffer(content);
    let racingPut: Promise<{ created: boolean }> | undefined;
    const collected = await b.guard.collect(hash, 0, async () => {
      // B holds the hash's lock and has decided. A's put now starts: its touch must wait for B.
      racingPut = a.store.putBuffer(content);
      await until(async () => {
        const { rows } = await adminQuery("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted");
        return rows[0].n > 0;
      }, "the writer's touch to wait on the collector's lock");
      await b.store.delete(hash);
    });
    expect(collected).toBe(true);
    // Had the touch not waited, A would have deduplicated against the object B then deleted.
    expect((await racingPut!).created).toBe(true);
    expect(await b.store.has(hash)).toBe(true);
    expect((await b.store.readBuffer(hash)).equals(content)).toBe(true);
  });
});
