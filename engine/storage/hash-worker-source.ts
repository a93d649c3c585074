// The hash worker's code, kept as a string and started with `new Worker(source, { eval: true })`.
// Why a string: a worker needs a JavaScript file at run time. `new URL('./x.js', import.meta.url)` points
// at a .js file next to this module, which exists under dist/ but not when vitest runs the .ts sources,
// and tsc does not copy hand-written .js files. A string exists in both. `Function.prototype.toString`
// of a TypeScript function was rejected too: vitest's transform can inject helpers (`__name`) that do
// not exist inside the worker. The price is that this code is not type-checked, so it stays small and
// is covered by test/local-content-store.test.ts.
//
// Protocol: every request carries `id` and gets exactly one reply `{ id, ...result }` or
// `{ id, error: { message, code, errno, syscall, path, side } }`; `side` says whether the source
// ('source') or the store's temp file ('store') failed. `file` requests also post
// `{ id, progress: bytes }` messages before their reply.
//
// Requests:
//  - begin {sid, tmpPath}: create the temp file (O_EXCL, 0444) and a BLAKE3 state for session sid.
//  - write {sid, buf, len}: hash + append buf[0, len); the (transferred) ArrayBuffer is sent back for reuse.
//  - end {sid}: fsync + close the temp file; reply {hash, size}.
//  - abort {sid}: close the temp file if open (the main thread unlinks it).
//  - file {src, tmpPath|null, maxBytes|null, progress}: read src in chunks, hash, copy into tmpPath (if
//    given), fsync; reply {hash, size} or {tooLarge: true, size} once more than maxBytes were read.
//
// Synchronous fs calls are the point here: this thread exists to block on I/O and hashing so the main
// event loop does not.
//
// The thread lowers its own priority (nice +5; on Linux setpriority(0) applies to the calling thread
// only). Bulk ingest is background work: when the 2 cores are contended, the event loop — which
// answers requests and feeds this thread — should win. Measured at a load average of ~6 on this
// 2-core machine: event-loop gaps during a 64 MB ingest reached 340 ms at equal priority, <100 ms at +5.

export const HASH_WORKER_SOURCE = `
'use strict';
const fs = require('node:fs');
const { parentPort, workerData } = require('node:worker_threads');
const { Blake3Hasher } = require(workerData.blakeModulePath);
const CHUNK = workerData.chunkBytes;
const sessions = new Map();
try {
  require('node:os').setPriority(0, 5);
} catch {
  // Not permitted or not supported: run at normal priority.
}

function writeAll(fd, buf, len) {
  let off = 0;
  while (off < len) off += fs.writeSync(fd, buf, off, len - off);
}

function describe(err, side) {
  const e = err || {};
  return { message: String(e.message || err), code: e.code, errno: e.errno, syscall: e.syscall, path: e.path, side };
}

function closeQuietly(fd) {
  // Only used on paths that already report a failure; a second error would hide the first.
  try { fs.closeSync(fd); } catch {}
}

function hashFile(m) {
  let src = -1;
  let dst = -1;
  let side = 'source';
  try {
    src = fs.openSync(m.src, 'r');
    if (m.tmpPath !== null) {
      side = 'store';
      dst = fs.openSync(m.tmpPath, 'wx', 0o444);
    }
    const buf = Buffer.allocUnsafe(CHUNK);
    const hasher = new Blake3Hasher();
    let size = 0;
    // A span of the file (a shard inside a pack file) when m.span = {offset, length}.
    const span = m.span || null;
    for (;;) {
      side = 'source';
      const want = span === null ? CHUNK : Math.min(CHUNK, span.length - size);
      if (want === 0) break;
      const n = fs.readSync(src, buf, 0, want, span === null ? null : span.offset + size);
      if (n === 0) break;
      size += n;
      if (m.maxBytes !== null && size > m.maxBytes) return { tooLarge: true, size };
      const view = n === CHUNK ? buf : buf.subarray(0, n);
      hasher.update(view);
      if (dst >= 0) {
        side = 'store';
        writeAll(dst, buf, n);
      }
      if (m.progress) parentPort.postMessage({ id: m.id, progress: size });
    }
    if (dst >= 0) {
      side = 'store';
      fs.fsyncSync(dst);
    }
    return { hash: hasher.digest('hex'), size };
  } catch (err) {
    return { error: describe(err, side) };
  } finally {
    if (src >= 0) closeQuietly(src);
    if (dst >= 0) closeQuietly(dst);
  }
}

function handle(m) {
  switch (m.op) {
    case 'begin': {
      const fd = fs.openSync(m.tmpPath, 'wx', 0o444);
      sessions.set(m.sid, { fd, hasher: new Blake3Hasher(), size: 0 });
      return [{}];
    }
    case 'write': {
      const s = sessions.get(m.sid);
      if (!s) throw new Error('unknown hash session ' + m.sid);
      const buf = Buffer.from(m.buf, 0, m.len);
      s.hasher.update(buf);
      writeAll(s.fd, buf, m.len);
      s.size += m.len;
      return [{ buf: m.buf }, [m.buf]];
    }
    case 'end': {
      const s = sessions.get(m.sid);
      if (!s) throw new Error('unknown hash session ' + m.sid);
      sessions.delete(m.sid);
      try {
        fs.fsyncSync(s.fd);
      } finally {
        closeQuietly(s.fd);
      }
      return [{ hash: s.hasher.digest('hex'), size: s.size }];
    }
    case 'abort': {
      const s = sessions.get(m.sid);
      sessions.delete(m.sid);
      if (s) closeQuietly(s.fd);
      return [{}];
    }
    case 'file':
      return [hashFile(m)];
    default:
      throw new Error('unknown hash worker op ' + m.op);
  }
}

parentPort.on('message', (m) => {
  let reply;
  let transfer;
  try {
    [reply, transfer] = handle(m);
  } catch (err) {
    reply = { error: describe(err, 'store') };
  }
  parentPort.postMessage(Object.assign({ id: m.id }, reply), transfer || []);
});
`;
