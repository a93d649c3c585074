import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StrataError } from '../engine/errors.js';
import { decodeSeqCursor, encodeCursor, prefixUpperBound } from '../engine/storage/sqlite-cursor.js';
import { openSqliteRepository } from '../engine/storage/sqlite-repository.js';
import { LATEST_SCHEMA_VERSION } from '../engine/storage/sqlite-migrations.js';
import { metadataRepositoryConformance } from './conformance/metadata-repository.js';
import { commitAll, expectStrataError, PROJECT, recordMaker } from './conformance/metadata-repository-fixtures.js';

metadataRepositoryConformance('sqlite', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'strata-sqlite-conformance-'));
  const repository = openSqliteRepository({ file: join(dir, 'metadata.db') });
  return {
    repository,
    cleanup: async () => {
      await repository.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

describe('sqlite repository specifics', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'strata-sqlite-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses a commit that carries content (no store hands it content to keep) and commits nothing', async () => {
    const repository = openSqliteRepository({ file: join(dir, 'm.db') });
    try {
      const make = recordMaker();
      const record = make.write('a.txt', 'a');
      await expect(repository.versions.commit([{ record, content: Buffer.from('a') }])).rejects.toThrow('does not store content');
      expect(await repository.versions.getEntry(PROJECT, 'a.txt')).toBeNull();
    } finally {
      await repository.close();
    }
  });

  it('sets the durability pragmas', async () => {
    const file = join(dir, 'm.db');
    const repository = openSqliteRepository({ file });
    await repository.close();
    const db = new Database(file);
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    } finally {
      db.close();
    }
  });

  it('migrates once; reopening keeps the data and applies nothing', async () => {
    const file = join(dir, 'm.db');
    const first = openSqliteRepository({ file });
    const make = recordMaker();
    await commitAll(first, [make.write('kept.txt', 'still here')]);
    await first.close();
    const second = openSqliteRepository({ file });
    expect((await second.versions.getEntry(PROJECT, 'kept.txt'))?.size).toBe(10);
    await second.close();
    const db = new Database(file, { readonly: true });
    try {
      const rows = db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all();
      expect(rows).toStrictEqual(Array.from({ length: LATEST_SCHEMA_VERSION }, (_, i) => i + 1));
    } finally {
      db.close();
    }
  });

  it('refuses a database written by a newer schema', async () => {
    const file = join(dir, 'm.db');
    await openSqliteRepository({ file }).close();
    const db = new Database(file);
    db.prepare('INSERT INTO schema_migrations (version, name) VALUES (?, ?)').run(LATEST_SCHEMA_VERSION + 1, 'future');
    db.close();
    let error: unknown;
    try {
      openSqliteRepository({ file });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(StrataError);
    expect((error as StrataError).code).toBe('STORAGE_ERROR');
    expect((error as StrataError).details).toStrictEqual({ schemaVersion: LATEST_SCHEMA_VERSION + 1, supported: LATEST_SCHEMA_VERSION });
  });

  it('reports a file that is not a database as STORAGE_ERROR', async () => {
    const file = join(dir, 'garbage.db');
    const { writeFile } = await import('node:fs/promises');
    await writeFile(file, 'this is not a database, just some bytes that go on for a while '.repeat(100));
    expect(() => openSqliteRepository({ file })).toThrow(StrataError);
    try {
      openSqliteRepository({ file });
    } catch (error) {
      expect((error as StrataError).code).toBe('STORAGE_ERROR');
      expect((error as StrataError).details).toStrictEqual({ sqliteCode: 'SQLITE_NOTADB' });
    }
  });

  it('two connections to one file see each other and never lose a commit', async () => {
    const file = join(dir, 'm.db');
    const a = openSqliteRepository({ file });
    const b = openSqliteRepository({ file });
    const make = recordMaker();
    const first = make.write('shared.txt', 'from a');
    await commitAll(a, [first]);
    const fromB = make.write('shared.txt', 'from b');
    const stale = make.write('shared.txt', 'stale');
    expect(await b.versions.commit([{ record: fromB, expectedCurrent: first.versionId }])).toMatchObject([{ ok: true }]);
    expect(await a.versions.commit([{ record: stale, expectedCurrent: first.versionId }])).toStrictEqual([
      { ok: false, code: 'STALE_BASE_VERSION', currentVersionId: fromB.versionId },
    ]);
    await a.close();
    await b.close();
  });

  it('uses the indexes it was designed around', async () => {
    const file = join(dir, 'm.db');
    await openSqliteRepository({ file }).close();
    const db = new Database(file, { readonly: true });
    const plan = (sql: string): string =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as Array<{ detail: string }>).map((r) => r.detail).join('; ');
    try {
      expect(plan("SELECT * FROM versions WHERE project_id = 'p' AND path = 'f' AND seq < 9 ORDER BY seq DESC LIMIT 5")).toMatch(
        /USING INDEX versions_by_path/,
      );
      expect(plan("SELECT * FROM versions WHERE project_id = 'p' AND seq < 9 ORDER BY seq DESC LIMIT 5")).toMatch(
        /USING INDEX versions_by_project/,
      );
      expect(plan("SELECT DISTINCT content_hash FROM versions WHERE content_hash IN ('a', 'b')")).toMatch(
        /USING COVERING INDEX versions_by_hash/,
      );
      expect(plan("SELECT 1 FROM entries WHERE project_id = 'p' AND path >= 'dir/' AND path < 'dir0' LIMIT 1")).toMatch(
        /USING PRIMARY KEY \(project_id=\? AND path>\? AND path<\?\)/,
      );
      expect(plan('SELECT 1 FROM snapshot_entries WHERE version_seq = 5')).toMatch(/snapshot_entries_by_version/);
    } finally {
      db.close();
    }
  });
});

describe('sqlite cursors and path ranges', () => {
  it('a cursor only works in the listing that made it', async () => {
    const cursor = encodeCursor('snapshots', 7);
    expect(decodeSeqCursor('snapshots', cursor)).toBe(7);
    for (const kind of ['history', 'audit'] as const) {
      await expectStrataError(
        Promise.resolve().then(() => decodeSeqCursor(kind, cursor)),
        'INVALID_CURSOR',
        { field: 'cursor', reason: `not a ${kind} cursor` },
      );
    }
  });

  it('computes the first string after every string with a prefix, in code point order', () => {
    const cases: Array<[string, string | null]> = [
      ['', null],
      ['dir/', 'dir0'],
      ['a%', 'a&'],
      ['x\uD7FF', 'x\uE000'],
      ['x\u{10FFFF}', 'y'],
      ['\u{10FFFF}\u{10FFFF}', null],
      ['é', 'ê'],
      ['😀', '😁'],
    ];
    for (const [prefix, bound] of cases) expect(prefixUpperBound(prefix), JSON.stringify(prefix)).toBe(bound);
  });

  it('a prefix ending below the surrogate range excludes the characters after it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'strata-sqlite-'));
    const repository = openSqliteRepository({ file: join(dir, 'm.db') });
    try {
      const make = recordMaker();
      await commitAll(repository, ['k\uD7FFz', 'k\uE001', 'k\uFFFD', 'k\u{10FFFF}'].map((p) => make.write(p, p)));
      const listed = await repository.versions.listEntries(PROJECT, { prefix: 'k\uD7FF', limit: 10 });
      expect(listed.items.map((e) => e.path)).toStrictEqual(['k\uD7FFz']);
      const tail = await repository.versions.listEntries(PROJECT, { prefix: 'k\u{10FFFF}', limit: 10 });
      expect(tail.items.map((e) => e.path)).toStrictEqual(['k\u{10FFFF}']);
    } finally {
      await repository.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
