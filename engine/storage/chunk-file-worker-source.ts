// The chunk-file worker's code, run with `new Worker(source, { eval: true })` for the reasons given in
// hash-worker-source.ts (a string exists both under vitest and under dist/; this code is not
// type-checked, so it stays small; test/dataset-chunker.test.ts covers it).
//
// One worker per file: workerData {path, minSize, avgSize, maxSize, addonPath|null, jsModuleUrl,
// blakeModulePath, blockBytes}. It reads the file once, in blocks, and feeds every block to the
// chunker, the whole-file BLAKE3 hasher and the open chunk's hasher, so the chunk hashes and the file
// hash describe the same bytes even if the file changes meanwhile. It posts exactly one message:
// {chunks: [{offset, size, hash, staged?}], hash, size} or {error: {message, code, errno, syscall, path}}.
//
// With workerData.stage = {tmpDir, objectsDir, minBytes}, the worker also writes each chunk of at least
// minBytes that the store's loose objects do not hold yet (and that this file has not staged already)
// to a temp file of the store (<tmpDir>/<pid>-<random>.tmp, the store's own pattern, so a crash leaves
// it to the next start's cleanup) and reports its path as \`staged\`: the bytes written are the bytes
// just hashed, from the same buffer, so the caller can adopt the file under that hash without reading
// it again. Not fsynced here: adopting fsyncs it before it becomes an object.
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

async function openChunker() {
  const { minSize, avgSize, maxSize } = workerData;
  if (workerData.addonPath !== null) {
    const { Chunker } = require(workerData.addonPath);
    return new Chunker(minSize, avgSize, maxSize);
  }
  const { JsGearChunker } = await import(workerData.jsModuleUrl);
  return new JsGearChunker(minSize, avgSize, maxSize);
}

const stage = workerData.stage;
const staged = [];

function stageChunk(hash, bytes) {
  const hex = hash.slice('blake3:'.length);
  if (fs.existsSync(stage.objectsDir + '/' + hex.slice(0, 2) + '/' + hex.slice(2))) return undefined;
  const path = stage.tmpDir + '/' + process.pid + '-' + require('node:crypto').randomUUID() + '.tmp';
  const out = fs.openSync(path, 'wx', 0o600);
  staged.push(path);
  try {
    let done = 0;
    while (done < bytes.length) done += fs.writeSync(out, bytes, done, bytes.length - done);
  } finally {
    fs.closeSync(out);
  }
  return path;
}

function chunkFile(chunker) {
  const fd = fs.openSync(workerData.path, 'r');
  try {
    const buf = Buffer.allocUnsafe(workerData.blockBytes);
    // The open chunk's bytes, when staging (a chunk is at most maxSize bytes).
    const held = stage ? Buffer.allocUnsafe(workerData.maxSize) : null;
    let heldLength = 0;
    const stagedHashes = new Set();
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
      if (held && chunk.size >= stage.minBytes && !stagedHashes.has(chunk.hash)) {
        const path = stageChunk(chunk.hash, held.subarray(0, heldLength));
        if (path !== undefined) {
          chunk.staged = path;
          stagedHashes.add(chunk.hash);
        }
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
    return { chunks, hash: 'blake3:' + whole.digest('hex'), size: pos };
  } finally {
    fs.closeSync(fd);
  }
}

function describe(err) {
  const e = err || {};
  return { message: String(e.message || err), code: e.code, errno: e.errno, syscall: e.syscall, path: e.path };
}

openChunker().then(
  (chunker) => {
    let reply;
    try {
      reply = chunkFile(chunker);
    } catch (err) {
      // Nothing staged survives a failure: the caller gets no paths to clean up.
      for (const path of staged) {
        try {
          fs.rmSync(path, { force: true });
        } catch {
          // the store's start-up cleanup removes it
        }
      }
      reply = { error: describe(err) };
    }
    parentPort.postMessage(reply);
  },
  (err) => parentPort.postMessage({ error: describe(err) }),
);
`;
