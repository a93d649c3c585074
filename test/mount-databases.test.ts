// What a database on the mount looks like in history (issue 39 item 7). An fsync asks for durability,
// not for a version: SQLite's 600 commits were 600 versions of the database (and as many of its -wal
// file), 2 ms each. Now a commit's fsync goes to the mount's journal; the database is versioned at its
// close, and while it is held open, at an fsync once its change has gone unversioned for 2 s (right
// after SQLite made the file consistent). SQLite's side files (-wal, -shm, -journal) are not versioned:
// they only mean something with the exact database state they were written against.

import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject } from './mount-harness.js';

let m: MountedDir;

beforeAll(async () => {
  m = await mountProject();
});

afterAll(async () => {
  await m?.dispose();
});

const COMMITS = `
import sqlite3, sys
mode = sys.argv[1]
c = sqlite3.connect(sys.argv[2], isolation_level=None)
c.execute('pragma journal_mode=%s' % mode)
c.execute('pragma synchronous=full')
c.execute('create table t (i integer primary key, s text)')
for i in range(600):
    c.execute('begin'); c.execute('insert into t values (?, ?)', (i, 'row %d' % i)); c.execute('commit')
c.close()
`;

/** Rows of table t in a database file's bytes (opened outside the mount). */
async function rowsIn(bytes: Buffer): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'strata-db-'));
  try {
    await writeFile(join(dir, 'copy.db'), bytes);
    const { stdout } = await promisify(execFile)('python3', ['-c', "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from t').fetchone()[0])", join(dir, 'copy.db')]);
    return Number(stdout.trim());
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function readVersion(versionId: string): Promise<Buffer> {
  const response = await fetch(`${m.url}/v1/projects/${m.projectId}/fs/read?versionId=${versionId}`, { headers: { authorization: `Bearer ${m.apiKey}` }, signal: AbortSignal.timeout(20_000) });
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

describe('SQLite on the mount', () => {
  for (const [mode, name] of [
    ['wal', 'wal.db'],
    ['delete', 'rollback.sqlite'],
  ] as const) {
    it(`${mode} mode: 600 commits are a few versions of the database, complete at the close, none of its side files`, async () => {
      await inMount(m, `python3 -c "${COMMITS}" ${mode} ${name}`, 120_000);
      await m.idle();
      const versions = await m.history(name);
      // One at the close, and one per 2 s the commits took at most (a loaded machine takes longer).
      expect(versions.length).toBeGreaterThanOrEqual(1);
      expect(versions.length).toBeLessThan(60);
      expect(await rowsIn(await m.read(name))).toBe(600);
      for (const side of ['-wal', '-shm', '-journal']) expect(await m.history(`${name}${side}`), side).toEqual([]);
      // Each version in between is a database SQLite opens whole (taken right after a commit's fsync).
      for (const version of versions.slice(1)) expect(await rowsIn(await readVersion(version.versionId))).toBeLessThanOrEqual(600);
    }, 180_000);
  }
});
