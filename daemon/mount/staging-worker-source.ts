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
const CHUNK = 1 << 20;
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
    case 'write': {
      const f = get(m.sid);
      const buf = Buffer.from(m.buf, 0, m.len);
      if (f.seq) {
        if (m.offset === f.hashed) {
          f.hasher.update(buf);
          f.hashed += m.len;
        } else {
          f.seq = false;
        }
      }
      writeAll(f.fd, buf, 0, m.len, m.offset);
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
      const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + n);
      return [{ buf: ab, n }, [ab]];
    }
    case 'truncate': {
      const f = get(m.sid);
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
      fs.fsyncSync(get(m.sid).fd);
      return [{}];
    }
    case 'finish': {
      const f = get(m.sid);
      files.delete(m.sid);
      try {
        fs.fsyncSync(f.fd);
        const size = fs.fstatSync(f.fd).size;
        if (f.seq && f.hashed === size) return [{ hash: f.hasher.digest('hex'), size, rehashed: false }];
        const again = rehash(f.fd);
        return [{ hash: again.hex, size: again.size, rehashed: true }];
      } finally {
        fs.closeSync(f.fd);
      }
    }
    case 'close': {
      const f = files.get(m.sid);
      files.delete(m.sid);
      if (f) {
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
    // A failed write still owes the main thread its buffer back.
    if (m.op === 'write' && m.buf) {
      reply.buf = m.buf;
      transfer = [m.buf];
    }
  }
  parentPort.postMessage(Object.assign({ id: m.id }, reply), transfer || []);
});
`;
