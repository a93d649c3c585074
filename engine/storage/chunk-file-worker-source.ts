// The chunk-file worker's code, run with `new Worker(source, { eval: true })` for the reasons given in
// hash-worker-source.ts (a string exists both under vitest and under dist/; this code is not
// type-checked, so it stays small; test/dataset-chunker.test.ts covers it).
//
// A long-lived thread (workerData {blakeModulePath, sqliteModulePath}) that chunks one file per job:
// {id, path, minSize, avgSize, maxSize, addonPath|null, jsModuleUrl, blockBytes, stage|null}. It reads
// the file once, in blocks, and feeds every block to the chunker, the whole-file BLAKE3 hasher and the
// open chunk's hasher, so the chunk hashes and the file hash describe the same bytes even if the file
// changes meanwhile. It answers each job with exactly one message: {id, chunks: [{offset, size, hash,
// packOffset?}], hash, size, packBytes} or {id, error: {message, code, errno, syscall, path}}.
//
// With job.stage = {packPath, objectsDir, dbPath, minBytes}, the worker also
// appends each chunk of at least minBytes that the store does not hold yet (no loose object, no row in
// the object pack's objects or pack_entries tables, not staged by this file already) to one new pack
// file at packPath (a temp name of the store: a crash leaves it to the next start's cleanup), and
// reports its offset there as \`packOffset\`; the reply's \`packBytes\` is the pack's length. The bytes
// written are the bytes just hashed, from the same buffer, so the store can index the pack without
// reading it again (local-content-store-shard-packs.ts), which fsyncs the pack.
//
// Like the hash worker, the thread lowers its own priority (nice +5): chunking a dataset is background
// work, and the event loop must win when the 2 cores are contended.

export const CHUNK_FILE_WORKER_SOURCE = `
'use strict';
const fs = require('node:fs');
const { parentPort, workerData } = require('node:worker_threads');
const { Blake3Hasher } = require(workerData.blakeModulePath);
try {
  require('node:os').setPriority(0, 5);
} catch {
  // Not permitted or not supported: run at normal priority.
}

async function openChunker(job) {
  const { minSize, avgSize, maxSize } = job;
  if (job.addonPath !== null) {
    const { Chunker } = require(job.addonPath);
    return new Chunker(minSize, avgSize, maxSize);
  }
  const { JsGearChunker } = await import(job.jsModuleUrl);
  return new JsGearChunker(minSize, avgSize, maxSize);
}

function openPack(stage) {
  const Database = require(workerData.sqliteModulePath);
  const db = new Database(stage.dbPath, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    const known = db.prepare('SELECT 1 FROM pack_entries WHERE hash = ? UNION ALL SELECT 1 FROM objects WHERE hash = ? LIMIT 1');
    const fd = fs.openSync(stage.packPath, 'wx', 0o600);
    return { stage, db, known, fd, bytes: 0, staged: new Set(), closed: false };
  } catch (err) {
    db.close();
    throw err;
  }
}

/** Appends the chunk to the pack unless the store (or this pack) has it; returns its offset or undefined. */
function stageChunk(pack, hash, bytes) {
  if (pack.staged.has(hash) || pack.known.get(hash, hash) !== undefined) return undefined;
  const hex = hash.slice('blake3:'.length);
  if (fs.existsSync(pack.stage.objectsDir + '/' + hex.slice(0, 2) + '/' + hex.slice(2))) return undefined;
  const offset = pack.bytes;
  let done = 0;
  while (done < bytes.length) done += fs.writeSync(pack.fd, bytes, done, bytes.length - done, offset + done);
  pack.bytes += bytes.length;
  pack.staged.add(hash);
  return offset;
}

// Not fsynced here: the store does that on libuv's pool (ShardPacks.commit), so this thread is free
// for the next file while the disk catches up.
function closePack(pack) {
  if (pack === null || pack.closed) return;
  pack.closed = true;
  try {
    fs.closeSync(pack.fd);
  } finally {
    pack.db.close();
  }
}

function chunkFile(job, chunker, pack) {
  const fd = fs.openSync(job.path, 'r');
  try {
    const buf = Buffer.allocUnsafe(job.blockBytes);
    // The open chunk's bytes, when staging (a chunk is at most maxSize bytes).
    const held = pack !== null ? Buffer.allocUnsafe(job.maxSize) : null;
    let heldLength = 0;
    const whole = new Blake3Hasher();
    let piece = new Blake3Hasher();
    const chunks = [];
    let start = 0;
    let pos = 0;
    const add = (bytes) => {
      piece.update(bytes);
      if (held) {
        held.set(bytes, heldLength);
        heldLength += bytes.length;
      }
    };
    const close = (end) => {
      const chunk = { offset: start, size: end - start, hash: 'blake3:' + piece.digest('hex') };
      if (held && chunk.size >= pack.stage.minBytes) {
        const offset = stageChunk(pack, chunk.hash, held.subarray(0, heldLength));
        if (offset !== undefined) chunk.packOffset = offset;
      }
      chunks.push(chunk);
      piece = new Blake3Hasher();
      heldLength = 0;
      start = end;
    };
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      const view = n === buf.length ? buf : buf.subarray(0, n);
      whole.update(view);
      let from = 0;
      for (const end of chunker.push(view)) {
        add(view.subarray(from, end - pos));
        from = end - pos;
        close(end);
      }
      if (from < n) add(view.subarray(from));
      pos += n;
    }
    for (const end of chunker.finish()) close(end);
    return { chunks, hash: 'blake3:' + whole.digest('hex'), size: pos, packBytes: pack === null ? 0 : pack.bytes };
  } finally {
    fs.closeSync(fd);
  }
}

function describe(err) {
  const e = err || {};
  return { message: String(e.message || err), code: e.code, errno: e.errno, syscall: e.syscall, path: e.path };
}

async function run(job) {
  let pack = null;
  try {
    const chunker = await openChunker(job);
    if (job.stage) pack = openPack(job.stage);
    const reply = chunkFile(job, chunker, pack);
    closePack(pack);
    return reply;
  } catch (err) {
    // Nothing staged survives a failure: the caller gets no pack to clean up.
    try {
      closePack(pack);
    } catch {
      // closing failed too; the unlink below still runs
    }
    if (pack !== null) {
      try {
        fs.rmSync(job.stage.packPath, { force: true });
      } catch {
        // the store's start-up cleanup removes it
      }
    }
    return { error: describe(err) };
  }
}

// One job at a time: the caller never sends a second before the first is answered.
parentPort.on('message', (job) => {
  run(job).then((reply) => parentPort.postMessage({ id: job.id, ...reply }));
});
`;
