// The metadata database's WAL is checkpointed by a thread of its own (engine/storage/sqlite-checkpointer.ts):
// the main connection never checkpoints inside a commit, yet the WAL stays bounded, the database file
// receives the pages, close leaves no WAL behind, and a thread that cannot run hands checkpointing back.
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { VersionCommit } from '../engine/ports/metadata-repository.js';
import { SqliteCheckpointer } from '../engine/storage/sqlite-checkpointer.js';
import { openSqliteRepository } from '../engine/storage/sqlite-repository.js';
import { waitFor } from './daemon-harness.js';

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'strata-checkpoint-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A database in WAL mode whose own connection never checkpoints, with `pages` pages written. */
function walDatabase(file: string, pages: number): Database.Database {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('wal_autocheckpoint = 0');
  db.exec('CREATE TABLE t (v BLOB)');
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
  for (let i = 0; i < pages; i++) insert.run(Buffer.alloc(3000, i % 251));
  return db;
}

describe('sqlite checkpoint thread', () => {
  it('copies the WAL into the database file while the writer keeps its connection', async () => {
    const file = join(dir, 'db.sqlite');
    const db = walDatabase(file, 2000);
    const before = statSync(file).size;
    const checkpointer = new SqliteCheckpointer(file, () => {
      throw new Error('the fallback must not run');
    });
    try {
      checkpointer.changed();
      await waitFor('a checkpoint', async () => (checkpointer.stats.checkpoints > 0 ? true : undefined));
      expect(checkpointer.stats.failed).toBeNull();
      expect(checkpointer.stats.lastLog).toBeGreaterThan(1000);
      expect(checkpointer.stats.lastCheckpointed).toBe(checkpointer.stats.lastLog);
      expect(statSync(file).size).toBeGreaterThan(before + 2000 * 3000);
      // the writer goes on; its next transaction may rewind the WAL that was copied
      db.prepare('INSERT INTO t (v) VALUES (?)').run(Buffer.alloc(10));
      expect(db.prepare('SELECT count(*) FROM t').pluck().get()).toBe(2001);
    } finally {
      await checkpointer.close();
      db.close();
    }
  });

  it('gives checkpointing back to the main connection when the thread cannot open the database', async () => {
    let fellBack = 0;
    const checkpointer = new SqliteCheckpointer(join(dir, 'missing-dir', 'db.sqlite'), () => {
      fellBack += 1;
    });
    checkpointer.changed();
    await waitFor('the fallback', async () => (fellBack > 0 ? true : undefined));
    expect(checkpointer.stats.failed).toMatch(/.+/);
    checkpointer.changed(); // nothing more happens, and close does not wait for a dead thread
    await checkpointer.close();
    expect(fellBack).toBe(1);
  });
});

describe('the metadata repository with its checkpoint thread', () => {
  it('keeps the WAL bounded under 20,000 versions, and close removes it', async () => {
    const file = join(dir, 'meta.db');
    const repo = openSqliteRepository({ file });
    let peakWal = 0;
    try {
      for (let batch = 0; batch < 80; batch++) {
        const commits: VersionCommit[] = Array.from({ length: 250 }, (_, i) => {
          const n = batch * 250 + i;
          return {
            record: {
              versionId: `v-${String(n).padStart(6, '0')}`,
              projectId: 'p',
              path: `src/d${n % 100}/file-${n}.txt`,
              contentHash: `blake3:${n.toString(16).padStart(64, '0')}` as VersionCommit['record']['contentHash'],
              size: 100,
              actor: { id: 'a', kind: 'user', name: 'A' },
              timestamp: new Date(0).toISOString(),
              kind: 'write',
              restoredFrom: null,
              executable: false,
              symlink: false,
              dataset: false,
            },
          };
        });
        await repo.versions.commit(commits);
        peakWal = Math.max(peakWal, statSync(`${file}-wal`).size);
        await new Promise((resolve) => setTimeout(resolve, 5)); // the thread's turns come between commits
      }
      // Without checkpoints this WAL reaches ~80 MB; past 16 MiB a checkpoint with calls held back rewinds it.
      expect(peakWal).toBeLessThan(48 * 1024 * 1024);
      expect(await repo.versions.countVersions('p')).toBe(20_000);
    } finally {
      await repo.close();
    }
    expect(existsSync(`${file}-wal`)).toBe(false);
    const reopened = openSqliteRepository({ file });
    try {
      expect(await reopened.versions.countVersions('p')).toBe(20_000);
    } finally {
      await reopened.close();
    }
  });
});
