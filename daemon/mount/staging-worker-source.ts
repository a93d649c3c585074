// The staging worker's code, started with `new Worker(source, { eval: true })` for the same reason as
// engine/storage/hash-worker-source.ts (a string works both under dist/ and when vitest runs the .ts
// sources). Not type-checked, so it stays small; test/mount-*.test.ts cover it end to end.
//
// One worker thread owns the file descriptors of the staging files pinned to it and does every write,
// read, truncate and fsync on them, in message order — so a read posted after a write sees it without
// the main thread waiting for the write. While a file is written sequentially from offset 0 (dd, cp,
// tar, an editor's save) the worker hashes the bytes as they pass (BLAKE3, ~2.3 GB/s), so finishing
// the file costs an fsync, not a second read; any other pattern (a seek back, a gap, mmap writeback in
// random order) drops the running hash and `finish` re-reads the file once.
//
// Protocol: every request {id, op, sid, ...} gets exactly one reply {id, ...} or {id, error}.
//  - open {path, existing}: create (O_EXCL, 0600) or open an existing file (read-write)
//  - copy {src}: fill the (empty) file with the bytes of src, hashing them (copy-on-write of a base)
//  - reserve {limit}: the file takes the size `limit` of the base it will be filled from, and the
//    ranges written from now on are kept out of that fill. Writes may follow at once; the main thread
//    posts nothing else about the file before its `fill` (staging-file.ts fillBehind).
//  - fill {spans}: copy the base behind the tool's back, from its bytes as spans of local files
//    ({file, offset, size} in order: a loose object is one, a dataset a span per shard), a piece at a
//    time between other messages, skipping what was written; reads of what is not copied yet come from
//    the spans. So appending a byte to a 1 GiB file is answered at once; `finish`, `fsync` and
//    `complete` copy what is left first.
//  - complete {}: finish a fill now
//  - write {offset, buf, len}: pwrite; the transferred buffer comes back for reuse
//  - read {offset, len}: pread into a new buffer, transferred back with {n}
//  - truncate {size}
//  - fsync {}
//  - finish {}: fsync, digest (or re-hash), close; replies {hash, size}
//  - close {unlink}: close and optionally remove the file (never throws)

export const STAGING_WORKER_SOURCE = `
'use strict';
const fs = require('node:fs');
const { parentPort, workerData } = require('node:worker_threads');
const { Blake3Hasher } = require(workerData.blakeModulePath);
// native/fuse's startWriteback (sync_file_range), when the binding loads; without it the disk simply
// gets all of a long write at its fsync.
let startWriteback = null;
try {
  if (workerData.fuseModulePath) startWriteback = require(workerData.fuseModulePath).startWriteback || null;
} catch {}
const CHUNK = 1 << 20;
// A file written sequentially goes to disk every WRITEBACK_STEP bytes, while the tool still writes.
const WRITEBACK_STEP = 8 * CHUNK;
const files = new Map();

function describe(err) {
  const e = err || {};
  return { message: String(e.message || err), code: e.code, errno: e.errno, syscall: e.syscall };
}

function writeAll(fd, buf, off, len, pos) {
  let done = 0;
  while (done < len) done += fs.writeSync(fd, buf, off + done, len - done, pos + done);
}

function get(sid) {
  const f = files.get(sid);
  if (!f) throw Object.assign(new Error('unknown staging file ' + sid), { code: 'EBADF', errno: -9 });
  return f;
}

function rehash(fd) {
  const hasher = new Blake3Hasher();
  const buf = Buffer.allocUnsafe(CHUNK);
  let pos = 0;
  for (;;) {
    const n = fs.readSync(fd, buf, 0, CHUNK, pos);
    if (n === 0) break;
    hasher.update(n === CHUNK ? buf : buf.subarray(0, n));
    pos += n;
  }
  return { hex: hasher.digest('hex'), size: pos };
}

// Background fill (op 'fill'): f.fill = { src, limit, pos, written } while bytes of the base are
// still to be copied. \`written\`: sorted, disjoint [start, end) ranges below \`limit\` the tool wrote
// (never overwritten by the copy). Bytes below \`pos\` are copied or written; above, unwritten ones
// still live in src.
const filling = new Set();
let fillScheduled = false;

function addRange(ranges, start, end) {
  const out = [];
  let i = 0;
  while (i < ranges.length && ranges[i][1] < start) out.push(ranges[i++]);
  while (i < ranges.length && ranges[i][0] <= end) {
    start = Math.min(start, ranges[i][0]);
    end = Math.max(end, ranges[i][1]);
    i++;
  }
  out.push([start, end]);
  while (i < ranges.length) out.push(ranges[i++]);
  return out;
}

/** The parts of [start, end) that are still the base's: not written, at or above pos, below limit. */
function gaps(fill, start, end) {
  start = Math.max(start, fill.pos);
  end = Math.min(end, fill.limit);
  const out = [];
  for (const [a, b] of fill.written) {
    if (b <= start) continue;
    if (a >= end) break;
    if (a > start) out.push([start, a]);
    start = Math.max(start, b);
  }
  if (start < end) out.push([start, end]);
  return out;
}

/** The base as one logical file over its spans; every file is opened once, up front (compaction may unlink it later). */
function openSource(spans) {
  const fds = new Map();
  const parts = [];
  let at = 0;
  try {
    for (const span of spans) {
      if (!fds.has(span.file)) fds.set(span.file, fs.openSync(span.file, 'r'));
      parts.push({ start: at, fd: fds.get(span.file), offset: span.offset, size: span.size });
      at += span.size;
    }
  } catch (err) {
    for (const fd of fds.values()) fs.closeSync(fd);
    throw err;
  }
  return { parts, fds: [...fds.values()], size: at };
}

function closeSource(src) {
  if (!src) return;
  for (const fd of src.fds) {
    try { fs.closeSync(fd); } catch {}
  }
}

/** pread on the base: up to len bytes at pos into buf at off; the count read (short at its end). */
function readSource(src, buf, off, len, pos) {
  const parts = src.parts;
  let lo = 0;
  let hi = parts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (parts[mid].start <= pos) lo = mid;
    else hi = mid - 1;
  }
  let done = 0;
  for (let i = lo; i < parts.length && done < len; i++) {
    const part = parts[i];
    const from = pos + done - part.start;
    if (from >= part.size) continue;
    const want = Math.min(len - done, part.size - from);
    let got = 0;
    while (got < want) {
      const n = fs.readSync(part.fd, buf, off + done + got, want - got, part.offset + from + got);
      if (n === 0) break;
      got += n;
    }
    done += got;
    if (got < want) break;
  }
  return done;
}

function copyRange(src, fd, buf, start, end) {
  let pos = start;
  while (pos < end) {
    const n = readSource(src, buf, 0, Math.min(buf.length, end - pos), pos);
    if (n === 0) break;
    writeAll(fd, buf, 0, n, pos);
    pos += n;
  }
}

/** One piece of a fill: up to CHUNK bytes from pos. True when the fill is done. */
function fillStep(f, buf) {
  const fill = f.fill;
  if (!fill.src) throw Object.assign(new Error('the base content of this file was never opened'), { code: 'EIO', errno: -5 });
  const end = Math.min(fill.limit, fill.pos + CHUNK);
  for (const [a, b] of gaps(fill, fill.pos, end)) copyRange(fill.src, f.fd, buf, a, b);
  fill.pos = end;
  if (fill.pos < fill.limit) return false;
  endFill(f);
  return true;
}

function endFill(f) {
  if (!f.fill) return;
  closeSource(f.fill.src);
  f.fill = null;
  filling.delete(f);
}

function completeFill(f) {
  if (!f.fill) return;
  const buf = Buffer.allocUnsafe(CHUNK);
  while (!fillStep(f, buf)) {}
}

function scheduleFill() {
  if (fillScheduled || filling.size === 0) return;
  fillScheduled = true;
  const next = workerData.fillPauseMs > 0 ? (fn) => setTimeout(fn, workerData.fillPauseMs) : setImmediate;
  next(() => {
    fillScheduled = false;
    const buf = Buffer.allocUnsafe(CHUNK);
    for (const f of [...filling]) {
      try {
        fillStep(f, buf);
      } catch {
        // Left for finish/fsync/complete to meet again (and report) when they copy the rest.
        filling.delete(f);
      }
    }
    scheduleFill();
  });
}

function handle(m) {
  switch (m.op) {
    case 'open': {
      const fd = fs.openSync(m.path, m.existing ? 'r+' : 'wx+', 0o600);
      const size = m.existing ? fs.fstatSync(fd).size : 0;
      files.set(m.sid, { fd, path: m.path, hasher: new Blake3Hasher(), hashed: 0, seq: !m.existing || size === 0 });
      return [{ size }];
    }
    case 'copy': {
      const f = get(m.sid);
      const src = fs.openSync(m.src, 'r');
      try {
        const buf = Buffer.allocUnsafe(CHUNK);
        let pos = 0;
        f.hasher = new Blake3Hasher();
        for (;;) {
          const n = fs.readSync(src, buf, 0, CHUNK, pos);
          if (n === 0) break;
          const view = n === CHUNK ? buf : buf.subarray(0, n);
          f.hasher.update(view);
          writeAll(f.fd, view, 0, n, pos);
          pos += n;
        }
        f.hashed = pos;
        f.seq = true;
        return [{ size: pos }];
      } finally {
        fs.closeSync(src);
      }
    }
    case 'reserve': {
      const f = get(m.sid);
      fs.ftruncateSync(f.fd, m.limit);
      f.fill = { src: null, limit: m.limit, pos: 0, written: [] };
      f.seq = false;
      return [{ size: m.limit }];
    }
    case 'fill': {
      const f = get(m.sid);
      // A truncate to nothing of the base's bytes ended the fill before it began.
      if (!f.fill) return [{}];
      f.fill.src = openSource(m.spans);
      filling.add(f);
      scheduleFill();
      return [{}];
    }
    case 'complete': {
      const f = get(m.sid);
      completeFill(f);
      return [{}];
    }
    case 'write': {
      const f = get(m.sid);
      const buf = Buffer.from(m.buf, 0, m.len);
      if (f.fill && m.offset < f.fill.limit) f.fill.written = addRange(f.fill.written, m.offset, Math.min(m.offset + m.len, f.fill.limit));
      if (f.seq) {
        if (m.offset === f.hashed) {
          f.hasher.update(buf);
          f.hashed += m.len;
        } else {
          f.seq = false;
        }
      }
      writeAll(f.fd, buf, 0, m.len, m.offset);
      if (startWriteback !== null && f.seq && f.hashed - (f.writtenBack || 0) >= WRITEBACK_STEP) {
        const from = f.writtenBack || 0;
        startWriteback(f.fd, from, f.hashed - from);
        f.writtenBack = f.hashed;
      }
      return [{ buf: m.buf }, [m.buf]];
    }
    case 'read': {
      const f = get(m.sid);
      const buf = Buffer.allocUnsafe(m.len);
      let n = 0;
      while (n < m.len) {
        const got = fs.readSync(f.fd, buf, n, m.len - n, m.offset + n);
        if (got === 0) break;
        n += got;
      }
      if (f.fill) for (const [a, b] of gaps(f.fill, m.offset, m.offset + n)) readSource(f.fill.src, buf, a - m.offset, b - a, a);
      const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + n);
      return [{ buf: ab, n }, [ab]];
    }
    case 'truncate': {
      const f = get(m.sid);
      if (f.fill && m.size < f.fill.limit) {
        f.fill.limit = m.size;
        f.fill.written = f.fill.written.filter(([a]) => a < m.size).map(([a, b]) => [a, Math.min(b, m.size)]);
        if (f.fill.pos >= f.fill.limit) endFill(f);
      }
      fs.ftruncateSync(f.fd, m.size);
      if (m.size === 0) {
        f.hasher = new Blake3Hasher();
        f.hashed = 0;
        f.seq = true;
      } else if (m.size < f.hashed) {
        f.seq = false;
      }
      return [{}];
    }
    case 'fsync': {
      const f = get(m.sid);
      completeFill(f);
      fs.fsyncSync(f.fd);
      return [{}];
    }
    case 'finish': {
      const f = get(m.sid);
      // Only a finished file leaves the table: one whose fill or fsync failed (ENOSPC, EIO) stays open,
      // readable, and the capture's retry finishes it. Dropped first, it answered every later read
      // and capture with EBADF "unknown staging file", forever.
      completeFill(f);
      fs.fsyncSync(f.fd);
      const size = fs.fstatSync(f.fd).size;
      let reply;
      if (f.seq && f.hashed === size) reply = { hash: f.hasher.digest('hex'), size, rehashed: false };
      else {
        const again = rehash(f.fd);
        reply = { hash: again.hex, size: again.size, rehashed: true };
      }
      files.delete(m.sid);
      try { fs.closeSync(f.fd); } catch {}
      return [reply];
    }
    case 'close': {
      const f = files.get(m.sid);
      files.delete(m.sid);
      if (f) {
        endFill(f);
        try { fs.closeSync(f.fd); } catch {}
      }
      if (m.unlink) {
        try { fs.unlinkSync(m.unlink); } catch {}
      }
      return [{}];
    }
    default:
      throw new Error('unknown staging op ' + m.op);
  }
}

parentPort.on('message', (m) => {
  let reply;
  let transfer;
  try {
    [reply, transfer] = handle(m);
  } catch (err) {
    reply = { error: describe(err) };
    // A write that failed part of the way was hashed whole: finish re-reads the file instead.
    if (m.op === 'write' && files.has(m.sid)) files.get(m.sid).seq = false;
    // A failed write still owes the main thread its buffer back.
    if (m.op === 'write' && m.buf) {
      reply.buf = m.buf;
      transfer = [m.buf];
    }
  }
  parentPort.postMessage(Object.assign({ id: m.id }, reply), transfer || []);
});
`;
