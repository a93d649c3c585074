// The pack writer thread's code (a string for the same reason as hash-worker-source.ts: it must exist
// both under vitest's .ts sources and under dist/). It owns the only writing SQLite connection to
// objects/packed.sqlite and applies one batch of puts/deletes per transaction.
//
// Why a thread: better-sqlite3 is synchronous, and a WAL commit with synchronous=FULL waits for an
// fsync (0.2–0.5 ms idle, tens of ms while a large file is being written to the same disk). On the main
// thread that wait would block every request; here, puts keep arriving on the main thread and form the
// next batch while this one commits.
//
// Request {seq, ops: [...]} → reply {seq, results: [one per op]} or {seq, error: {message, code}}:
//   {kind: 'put', hash, data, now}            → created (boolean)
//   {kind: 'put', hash: null, data, now}      → {hash, size, created}: the thread hashes the bytes (BLAKE3,
//                                               as engine/hash.ts does), off the event loop
//   {kind: 'putMany', data, sizes, now}       → [{hash, size, created}]: contents back to back in data
//   {kind: 'delete', hash}                    → a row was removed (boolean)
//   {kind: 'entries', pack, entries: [{hash, offset, size}], now}
//                                             → created per entry (boolean[]); an entry already indexed
//                                               (in any pack) is only touched, its copy here is dead space
//   {kind: 'unentry', hash}                   → the pack the removed entry was in, or null
//   {kind: 'move', from, to, entries: [{hash, offset}]}
//                                             → entries repointed from pack "from" to "to" (number)
// The pack_entries rows index dataset shards kept inside pack files (local-content-store-shard-packs.ts).
// Request {op: 'close'} closes the database (checkpointing the WAL) and lets the thread exit.
// After a checkpoint the thread posts {checkpoint: {log, checkpointed}} (PackObjects counts them).
//
// Checkpoints: SQLite's automatic one ran inside the commit that took the WAL past 1,000 pages, so a
// bulk put (a git push's 5,300 blobs, 25 MB) paid for copying its pages into the database file while
// its next batches waited: 36 of 120 ms of commit time, measured. Here the thread checkpoints once
// it has had no batch for CHECKPOINT_IDLE_MS (PASSIVE: it never waits for readers), and SQLite's own
// checkpoint is left only as the bound for a stream of puts that never pauses, at 16,384 pages.

export const PACK_WORKER_SOURCE = `
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.sqliteModulePath);
const { blake3 } = require(workerData.blakeModulePath);
const db = new Database(workerData.dbPath);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.pragma('busy_timeout = 5000');
db.pragma('wal_autocheckpoint = 16384');
const select = db.prepare('SELECT data = ? AS same FROM objects WHERE hash = ?');
const insert = db.prepare('INSERT INTO objects (hash, size, data, touched_at) VALUES (?, ?, ?, ?)');
const touch = db.prepare('UPDATE objects SET touched_at = ? WHERE hash = ?');
const heal = db.prepare('UPDATE objects SET size = ?, data = ?, touched_at = ? WHERE hash = ?');
const remove = db.prepare('DELETE FROM objects WHERE hash = ?');
const entryInsert = db.prepare('INSERT OR IGNORE INTO pack_entries (hash, pack, offset, size, touched_at) VALUES (?, ?, ?, ?, ?)');
const entryTouch = db.prepare('UPDATE pack_entries SET touched_at = ? WHERE hash = ?');
const entryRemove = db.prepare('DELETE FROM pack_entries WHERE hash = ? RETURNING pack');
const entryMove = db.prepare('UPDATE pack_entries SET pack = ?, offset = ? WHERE hash = ? AND pack = ?');
const CHECKPOINT_IDLE_MS = 200;
let idleTimer = null;

function checkpointWhenIdle() {
  if (idleTimer !== null) clearTimeout(idleTimer);
  idleTimer = setTimeout(() => {
    idleTimer = null;
    try {
      const [result] = db.pragma('wal_checkpoint(PASSIVE)');
      parentPort.postMessage({ checkpoint: { log: result.log, checkpointed: result.checkpointed } });
    } catch {
      // busy or failed: the next batch arms the timer again, and close() checkpoints anyway
    }
  }, CHECKPOINT_IDLE_MS);
}

function applyOther(op) {
  switch (op.kind) {
    case 'entries':
      return op.entries.map((e) => {
        if (entryInsert.run(e.hash, op.pack, e.offset, e.size, op.now).changes > 0) return true;
        entryTouch.run(op.now, e.hash);
        return false;
      });
    case 'unentry': {
      const row = entryRemove.get(op.hash);
      return row === undefined ? null : row.pack;
    }
    case 'move':
      return op.entries.reduce((moved, e) => moved + entryMove.run(op.to, e.offset, e.hash, op.from).changes, 0);
    default:
      throw new Error('unknown pack op ' + op.kind);
  }
}

// A put of bytes already present only refreshes touched_at (so a concurrent GC spares the row), unless
// the stored bytes differ from the ones that hash to this key: then the row was damaged, and the good
// bytes we hold replace it. Comparing blobs in SQL costs nothing extra: the row is read either way.
const apply = db.transaction((ops) =>
  ops.map((op) => {
    if (op.kind === 'delete') {
      return remove.run(op.hash).changes > 0;
    }
    if (op.kind === 'putMany') {
      let offset = op.data.byteOffset;
      return op.sizes.map((size) => {
        const data = Buffer.from(op.data.buffer, offset, size);
        offset += size;
        const hash = 'blake3:' + blake3(data).toString('hex');
        return { hash, size, created: put(hash, data, op.now) };
      });
    }
    if (op.kind !== 'put') return applyOther(op);
    const data = Buffer.from(op.data.buffer, op.data.byteOffset, op.data.byteLength);
    if (op.hash !== null) return put(op.hash, data, op.now);
    const hash = 'blake3:' + blake3(data).toString('hex');
    return { hash, size: data.length, created: put(hash, data, op.now) };
  }),
);

function put(hash, data, now) {
  const row = select.get(data, hash);
  if (row === undefined) {
    insert.run(hash, data.length, data, now);
    return true;
  }
  if (row.same === 1) {
    touch.run(now, hash);
    return false;
  }
  heal.run(data.length, data, now, hash);
  return true;
}

parentPort.on('message', (m) => {
  if (m.op === 'close') {
    if (idleTimer !== null) clearTimeout(idleTimer);
    db.close();
    parentPort.close();
    return;
  }
  try {
    parentPort.postMessage({ seq: m.seq, results: apply(m.ops) });
  } catch (err) {
    parentPort.postMessage({ seq: m.seq, error: { message: String((err && err.message) || err), code: err && err.code } });
    return;
  }
  checkpointWhenIdle();
});
`;
