// Durable acknowledgement of SQLite commits (engine/storage/sqlite-wal-sync.ts): a call that changed
// the database resolves only after an fdatasync of the WAL that started after its commit; concurrent
// commits share fdatasync calls; reads never wait; a failed sync fails every later write.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StrataError } from '../engine/errors.js';
import type { MetadataRepository } from '../engine/ports/metadata-repository.js';
import { openSqliteRepository } from '../engine/storage/sqlite-repository.js';
import { acknowledgeDurably, WalSync } from '../engine/storage/sqlite-wal-sync.js';

let dir: string;
let db: Database.Database;
let wal: WalSync;
let repo: MetadataRepository;

/** A repository whose groups are tiny real SQLite operations, wrapped like the real one. */
function wrapped(): MetadataRepository {
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
  const count = db.prepare('SELECT count(*) FROM t').pluck();
  const group = {
    write: async (v: number) => insert.run(v).changes,
    writeThenFail: async (v: number) => {
      insert.run(v);
      throw new TypeError('after the insert');
    },
    read: async () => count.get() as number,
  };
  const totalChanges = db.prepare('SELECT total_changes()').pluck();
  const fake = { projects: group, versions: group, snapshots: group, access: group, close: async () => db.close() };
  return acknowledgeDurably(fake as unknown as MetadataRepository, () => totalChanges.get() as number, wal);
}

type Group = { write(v: number): Promise<number>; writeThenFail(v: number): Promise<number>; read(): Promise<number> };
const group = (r: MetadataRepository) => r.projects as unknown as Group;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'strata-walsync-'));
  db = new Database(join(dir, 'db.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE t (v INTEGER)');
  wal = new WalSync(join(dir, 'db.sqlite-wal'));
  repo = wrapped();
});

afterEach(async () => {
  await repo.close();
  await rm(dir, { recursive: true, force: true });
});

describe('WAL sync', () => {
  it('acknowledges a write only after an fdatasync that started after it', async () => {
    const before = wal.syncs;
    await group(repo).write(1);
    expect(wal.syncs).toBe(before + 1);
  });

  it('lets concurrent writes share fdatasync calls, each waiting for one that covers it', async () => {
    const seen: number[] = [];
    const writes = Array.from({ length: 100 }, (_, i) =>
      group(repo)
        .write(i)
        .then(() => seen.push(wal.syncs)),
    );
    await Promise.all(writes);
    // One for the first write, one shared by the 99 that committed while it ran.
    expect(wal.syncs).toBeGreaterThanOrEqual(1);
    expect(wal.syncs).toBeLessThanOrEqual(3);
    expect(seen.slice(1).every((n) => n >= 2)).toBe(true);
    expect(await group(repo).read()).toBe(100);
  });

  it('never makes a read wait for the disk', async () => {
    await group(repo).write(1);
    const syncs = wal.syncs;
    expect(await group(repo).read()).toBe(1);
    expect(wal.syncs).toBe(syncs);
  });

  it('syncs what a failing call committed before reporting its error', async () => {
    const syncs = wal.syncs;
    await expect(group(repo).writeThenFail(7)).rejects.toThrow(TypeError);
    expect(wal.syncs).toBe(syncs + 1);
  });

  it('after a failed fdatasync, fails every later write with STORAGE_ERROR', async () => {
    const broken = new WalSync(join(dir, 'missing', 'db.sqlite-wal'));
    await expect(broken.sync()).rejects.toMatchObject({ code: 'STORAGE_ERROR' });
    const second = await broken.sync().catch((error: unknown) => error);
    expect(second).toBeInstanceOf(StrataError);
    expect((second as StrataError).code).toBe('STORAGE_ERROR');
    await broken.close();
  });
});

describe('the SQLite repository', () => {
  it('acknowledges changes durably and reads straight through', async () => {
    const real = openSqliteRepository({ file: join(dir, 'metadata.sqlite') });
    try {
      await real.access.createOrganization({ orgId: 'o1', name: 'Org', createdAt: '2026-01-01T00:00:00.000Z' });
      expect(await real.access.getOrganization('o1')).toMatchObject({ orgId: 'o1', name: 'Org' });
      const db2 = new Database(join(dir, 'metadata.sqlite'), { readonly: true });
      try {
        expect(db2.pragma('journal_mode', { simple: true })).toBe('wal');
      } finally {
        db2.close();
      }
    } finally {
      await real.close();
    }
  });
});
