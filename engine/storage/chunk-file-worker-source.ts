// The chunk-file worker's code, run with `new Worker(source, { eval: true })` for the reasons given in
// hash-worker-source.ts (a string exists both under vitest and under dist/; this code is not
// type-checked, so it stays small; test/dataset-chunker.test.ts covers it).
//
// One worker per file: workerData {path, minSize, avgSize, maxSize, addonPath|null, jsModuleUrl,
// blakeModulePath, blockBytes}. It reads the file once, in blocks, and feeds every block to the
// chunker, the whole-file BLAKE3 hasher and the open chunk's hasher, so the chunk hashes and the file
// hash describe the same bytes even if the file changes meanwhile. It posts exactly one message:
// {chunks: [{offset, size, hash}], hash, size} or {error: {message, code, errno, syscall, path}}.
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

function chunkFile(chunker) {
  const fd = fs.openSync(workerData.path, 'r');
  try {
    const buf = Buffer.allocUnsafe(workerData.blockBytes);
    const whole = new Blake3Hasher();
    let piece = new Blake3Hasher();
    const chunks = [];
    let start = 0;
    let pos = 0;
    const close = (end) => {
      chunks.push({ offset: start, size: end - start, hash: 'blake3:' + piece.digest('hex') });
      piece = new Blake3Hasher();
      start = end;
    };
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      const view = n === buf.length ? buf : buf.subarray(0, n);
      whole.update(view);
      let from = 0;
      for (const end of chunker.push(view)) {
        piece.update(view.subarray(from, end - pos));
        from = end - pos;
        close(end);
      }
      if (from < n) piece.update(view.subarray(from));
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
      reply = { error: describe(err) };
    }
    parentPort.postMessage(reply);
  },
  (err) => parentPort.postMessage({ error: describe(err) }),
);
`;
