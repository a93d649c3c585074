// The watch index batches its writes (daemon/state.ts): one transaction per INDEX_FLUSH_MS or
// INDEX_FLUSH_ROWS rows, across event-loop turns, and every read in the meantime sees the staged
// rows, as if each had been written at once.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type DaemonState, INDEX_FLUSH_ROWS, type IndexRow, openDaemonState } from '../daemon/state.js';

const P = 'project-1';
const row = (path: string, ino: string, size = 1): IndexRow => ({ path, size, mtimeNs: '1', ino, executable: false, symlink: false, contentHash: `blake3:${'0'.repeat(64)}`, versionId: `v-${path}` });
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('daemon state: batched index writes', () => {
  let dir: string;
  let file: string;
  let state: DaemonState;
  /** what another connection sees: only what was committed */
  const committed = () => {
    const db = new Database(file, { readonly: true });
    try {
      return db.prepare<[string], { path: string }>('SELECT path FROM watch_index WHERE project_id = ? ORDER BY path').all(P).map((r) => r.path);
    } finally {
      db.close();
    }
  };
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'strata-state-'));
    file = join(dir, 'state.sqlite');
    state = openDaemonState(file);
  });
  afterEach(async () => {
    state.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('commits staged writes together shortly after; reads before that see them', async () => {
    state.index.put(P, row('a', '1'));
    state.index.put(P, row('b', '2'));
    expect(state.index.get(P, 'a')).toEqual(row('a', '1'));
    expect(committed()).toEqual([]);
    await vi.waitFor(() => expect(committed()).toEqual(['a', 'b']), { timeout: 10_000, interval: 5 });
    state.index.remove(P, 'a');
    expect(state.index.get(P, 'a')).toBeUndefined();
    expect(committed()).toEqual(['a', 'b']);
    await vi.waitFor(() => expect(committed()).toEqual(['b']), { timeout: 10_000, interval: 5 });
  });

  it('rows staged over many turns wait for one transaction, until INDEX_FLUSH_ROWS of them', async () => {
    // A clone's round of 16 paths at a time staged ~2 rows a turn: one transaction each was 2,500
    // WAL commits for 5,000 files (bench/sync-clone.ts).
    state.close();
    state = openDaemonState(file, { flushMs: 60_000 });
    for (let i = 0; i < 10; i++) {
      state.index.put(P, row(`turn-${i}`, String(i)));
      await nextTurn();
    }
    expect(committed()).toEqual([]);
    expect(state.index.get(P, 'turn-3')).toEqual(row('turn-3', '3'));
    for (let i = 10; i < INDEX_FLUSH_ROWS; i++) state.index.put(P, row(`turn-${i}`, String(i)));
    await nextTurn();
    expect(committed()).toHaveLength(INDEX_FLUSH_ROWS);
    state.index.put(P, row('last', 'last'));
    await nextTurn();
    expect(committed()).not.toContain('last');
    state.close();
    expect(committed()).toContain('last');
    state = openDaemonState(file);
  });

  it('rename detection (byIno) sees staged rows and not the rows they replace', async () => {
    state.index.put(P, row('old.txt', '7'));
    await nextTurn();
    state.index.remove(P, 'old.txt');
    state.index.put(P, row('new.txt', '7'));
    state.index.put(P, row('other.txt', '8'));
    expect(state.index.byIno(P, '7').map((r) => r.path)).toEqual(['new.txt']);
    expect(state.index.byIno('another-project', '7')).toEqual([]);
  });

  it('queries over many rows write the staged ones first; close writes them too', () => {
    for (const name of ['c', 'a', 'd/x', 'd/y']) state.index.put(P, row(name, name));
    expect(state.index.count(P)).toBe(4);
    expect(committed()).toEqual(['a', 'c', 'd/x', 'd/y']);
    state.index.put(P, row('e', 'e'));
    expect(state.index.under(P, 'd').map((r) => r.path)).toEqual(['d/x', 'd/y']);
    expect(state.index.all(P).map((r) => r.path)).toEqual(['a', 'c', 'd/x', 'd/y', 'e']);
    state.index.remove(P, 'c');
    expect(state.index.pathsAfter(P, '', 10)).toEqual(['a', 'd/x', 'd/y', 'e']);
    state.index.put(P, row('f', 'f'));
    state.close();
    expect(committed()).toEqual(['a', 'd/x', 'd/y', 'e', 'f']);
    state = openDaemonState(file);
  });
});

describe('daemon state: symbolic links in the watch index', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'strata-state-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('an index from before links gains the symlink column; its rows read as files; a link row round-trips', async () => {
    const file = join(dir, 'state.sqlite');
    const old = new Database(file);
    old.exec(`CREATE TABLE watch_index (
      project_id TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns TEXT NOT NULL,
      ino TEXT NOT NULL, executable INTEGER NOT NULL, content_hash TEXT NOT NULL, version_id TEXT NOT NULL,
      PRIMARY KEY (project_id, path)) WITHOUT ROWID`);
    old.prepare("INSERT INTO watch_index VALUES (?, 'old.txt', 1, '1', '9', 0, ?, 'v-old')").run(P, `blake3:${'0'.repeat(64)}`);
    old.close();
    const state = openDaemonState(file);
    try {
      expect(state.index.get(P, 'old.txt')).toMatchObject({ path: 'old.txt', symlink: false, executable: false });
      state.index.put(P, { ...row('link', '10', 9), symlink: true });
      expect(state.index.hasBelow(P, 'link')).toBe(false);
      state.index.put(P, row('d/x', '11'));
      expect(state.index.hasBelow(P, 'd')).toBe(true);
      expect(state.index.hasBelow(P, 'd/x')).toBe(false);
      await nextTurn();
      expect(state.index.get(P, 'link')).toMatchObject({ symlink: true, size: 9 });
      expect(state.index.hasBelow(P, 'd')).toBe(true);
    } finally {
      state.close();
    }
    // Opening it again adds nothing twice.
    openDaemonState(file).close();
  });
});
