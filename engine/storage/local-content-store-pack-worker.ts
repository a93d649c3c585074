// The pack writer thread's code (a string for the same reason as hash-worker-source.ts: it must exist
// both under vitest's .ts sources and under dist/). It owns the only writing SQLite connection to
// objects/packed.sqlite and applies one batch of puts/deletes per transaction.
//
// Why a thread: better-sqlite3 is synchronous, and a WAL commit with synchronous=FULL waits for an
// fsync (0.2–0.5 ms idle, tens of ms while a large file is being written to the same disk). On the main
// thread that wait would block every request; here, puts keep arriving on the main thread and form the
// next batch while this one commits.
//
// Request {seq, ops: [{kind: 'put', hash, data, now} | {kind: 'delete', hash}]} → reply
// {seq, results: [created: boolean, ...]} or {seq, error: {message, code}}. Request {op: 'close'}
// closes the database (checkpointing the WAL) and lets the thread exit.

export const PACK_WORKER_SOURCE = `
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.sqliteModulePath);
const db = new Database(workerData.dbPath);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.pragma('busy_timeout = 5000');
const select = db.prepare('SELECT data = ? AS same FROM objects WHERE hash = ?');
const insert = db.prepare('INSERT INTO objects (hash, size, data, touched_at) VALUES (?, ?, ?, ?)');
const touch = db.prepare('UPDATE objects SET touched_at = ? WHERE hash = ?');
const heal = db.prepare('UPDATE objects SET size = ?, data = ?, touched_at = ? WHERE hash = ?');
const remove = db.prepare('DELETE FROM objects WHERE hash = ?');

// A put of bytes already present only refreshes touched_at (so a concurrent GC spares the row), unless
// the stored bytes differ from the ones that hash to this key: then the row was damaged, and the good
// bytes we hold replace it. Comparing blobs in SQL costs nothing extra: the row is read either way.
const apply = db.transaction((ops) =>
  ops.map((op) => {
    if (op.kind === 'delete') {
      return remove.run(op.hash).changes > 0;
    }
    const data = Buffer.from(op.data.buffer, op.data.byteOffset, op.data.byteLength);
    const row = select.get(data, op.hash);
    if (row === undefined) {
      insert.run(op.hash, data.length, data, op.now);
      return true;
    }
    if (row.same === 1) {
      touch.run(op.now, op.hash);
      return false;
    }
    heal.run(data.length, data, op.now, op.hash);
    return true;
  }),
);

parentPort.on('message', (m) => {
  if (m.op === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    parentPort.postMessage({ seq: m.seq, results: apply(m.ops) });
  } catch (err) {
    parentPort.postMessage({ seq: m.seq, error: { message: String((err && err.message) || err), code: err && err.code } });
  }
});
`;
