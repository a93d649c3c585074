// The chunk-file worker's code, run with `new Worker(source, { eval: true })` for the reasons given in
// hash-worker-source.ts (a string exists both under vitest and under dist/; this code is not
// type-checked, so it stays small; test/dataset-chunker.test.ts covers it).
//
// A long-lived thread (workerData {blakeModulePath, sqliteModulePath}, pooled by chunk-threads.ts). Jobs:
//  - {id, op: 'file', path, minSize, avgSize, maxSize, addonPath|null, jsModuleUrl, blockBytes,
//    stage|null}: reads the file once, in blocks;
//  - a streaming session (chunk-session.ts): {op: 'begin', ...the same but path}, then
//    {op: 'data', buf, len} (the ArrayBuffer comes back in the reply, for reuse), then {op: 'end'} or
//    {op: 'abort'}.
// Every block goes to the chunker, the whole-file BLAKE3 hasher and the open chunk's hasher, so the
// chunk hashes and the whole hash describe the same bytes even if a file changes meanwhile. A 'file'
// or 'end' is answered with {id, chunks: [{offset, size, hash, packOffset?}], hash, size, packBytes}
// or {id, error: {message, code, errno, syscall, path}}; every message gets exactly one reply.
//
// With job.stage = {packPath, objectsDir, dbPath, minBytes, copyPath?}, the worker also
// keeps each chunk of at least minBytes that the store does not hold yet (no loose object, no row in
// the object pack's objects or pack_entries tables, not staged by this file already) in one new pack
// file at packPath (a temp name of the store: a crash leaves it to the next start's cleanup), and
// reports its offset there as \`packOffset\`; the reply's \`packBytes\` is the pack's length. The bytes
// written are the bytes just hashed, from the same buffer, so the store can index the pack without
// reading it again (local-content-store-shard-packs.ts), which fsyncs the pack. With stage.copyPath,
// every byte fed is also written there, in order, from the same buffer (kept-copies.ts: a pulled
// dataset's working-tree file); closed, not fsynced, at the end; removed with the pack on a failure.
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

// With job.cuts (the shard sizes of a manifest the bytes must match: a pulled dataset, or an upload
// whose manifest came first), the chunks are cut where the manifest says instead of searched for.
function fixedCuts(sizes) {
  let next = 0;
  let cut = 0;
  let pos = 0;
  return {
    push(view) {
      const ends = [];
      pos += view.length;
      while (next < sizes.length && cut + sizes[next] <= pos) {
        cut += sizes[next];
        next += 1;
        ends.push(cut);
      }
      return ends;
    },
    // What is left (a short last shard, or bytes past the manifest's size) is one more chunk, which
    // matches no shard.
    finish() {
      const ends = pos > cut ? [pos] : [];
      next = 0;
      cut = 0;
      pos = 0;
      return ends;
    },
  };
}

async function openChunker(job) {
  const { minSize, avgSize, maxSize } = job;
  if (Array.isArray(job.cuts)) return fixedCuts(job.cuts);
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
    let copyFd = null;
    try {
      // The file the bytes are about to become (0o666 less the umask, like any new file of the user's).
      if (stage.copyPath) copyFd = fs.openSync(stage.copyPath, 'wx', 0o666);
    } catch {
      // no copy (writeCopy says why that is fine)
    }
    return { stage, db, known, fd, copyFd, bytes: 0, staged: new Set(), closed: false };
  } catch (err) {
    db.close();
    throw err;
  }
}

/** Whether a chunk is new: not in the store's loose objects or object pack, not in this pack yet. */
function isNew(pack, hash) {
  if (pack.staged.has(hash) || pack.known.get(hash, hash) !== undefined) return false;
  const hex = hash.slice('blake3:'.length);
  return !fs.existsSync(pack.stage.objectsDir + '/' + hex.slice(0, 2) + '/' + hex.slice(2));
}

function writeAt(fd, bytes, position) {
  let done = 0;
  while (done < bytes.length) done += fs.writeSync(fd, bytes, done, bytes.length - done, position + done);
}

// The copy is a shortcut, never a reason to fail: a full disk drops it (the store then finds no
// whole copy and assembles the file from the pack, which reports that disk full where it always did).
function writeCopy(pack, view, position) {
  try {
    writeAt(pack.copyFd, view, position);
  } catch {
    try {
      fs.closeSync(pack.copyFd);
      fs.rmSync(pack.stage.copyPath, { force: true });
    } catch {
      // the store's check of the copy's size finds it short, and removes it
    }
    pack.copyFd = null;
  }
}

// Not fsynced here: the store does that on libuv's pool (ShardPacks.commit), so this thread is free
// for the next file while the disk catches up.
function closePack(pack) {
  if (pack === null || pack.closed) return;
  pack.closed = true;
  try {
    fs.closeSync(pack.fd);
    if (pack.copyFd !== null) fs.closeSync(pack.copyFd);
  } finally {
    pack.db.close();
  }
}

// The cut search and both hashes over a stream of blocks: feed() each block in order, then finish().
//
// When staging, the open chunk's bytes go straight into the pack at its end as they arrive, before
// anyone knows whether the chunk is new (that takes its hash, at its end). A new chunk then stays
// where it is; a known one is overwritten by the next chunk, or cut off by the final truncate. So a new
// byte is copied once (into the page cache) and nothing holds a chunk in memory; a known chunk costs
// the same copy into the same few pages, which were never going to reach the disk.
function createCutter(job, chunker, pack) {
  let open = 0;
  // With cuts, each chunk is checked against its shard's hash: a whole-content hash would only say again what they do.
  const whole = Array.isArray(job.cuts) ? null : new Blake3Hasher();
  // One hasher for every chunk, reset after each: a new native hasher per chunk (~2 KB each, freed
  // only when the thread's GC gets to their small JS wrappers) piled up with the file's length.
  const piece = new Blake3Hasher();
  const chunks = [];
  let start = 0;
  let pos = 0;
  const add = (bytes) => {
    piece.update(bytes);
    if (pack !== null) writeAt(pack.fd, bytes, pack.bytes + open);
    open += bytes.length;
  };
  const close = (end) => {
    const chunk = { offset: start, size: end - start, hash: 'blake3:' + piece.digest('hex') };
    if (pack !== null && chunk.size >= pack.stage.minBytes && isNew(pack, chunk.hash)) {
      chunk.packOffset = pack.bytes;
      pack.bytes += chunk.size;
      pack.staged.add(chunk.hash);
    }
    chunks.push(chunk);
    piece.reset();
    open = 0;
    start = end;
  };
  return {
    feed(view) {
      if (whole !== null) whole.update(view);
      if (pack !== null && pack.copyFd !== null) writeCopy(pack, view, pos);
      let from = 0;
      for (const end of chunker.push(view)) {
        add(view.subarray(from, end - pos));
        from = end - pos;
        close(end);
      }
      if (from < view.length) add(view.subarray(from));
      pos += view.length;
    },
    finish() {
      for (const end of chunker.finish()) close(end);
      if (pack !== null) fs.ftruncateSync(pack.fd, pack.bytes);
      return { chunks, hash: whole === null ? null : 'blake3:' + whole.digest('hex'), size: pos, packBytes: pack === null ? 0 : pack.bytes };
    },
  };
}

function chunkFile(job, chunker, pack) {
  const fd = fs.openSync(job.path, 'r');
  try {
    const buf = Buffer.allocUnsafe(job.blockBytes);
    const cutter = createCutter(job, chunker, pack);
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      cutter.feed(n === buf.length ? buf : buf.subarray(0, n));
    }
    return cutter.finish();
  } finally {
    fs.closeSync(fd);
  }
}

function describe(err) {
  const e = err || {};
  return { message: String(e.message || err), code: e.code, errno: e.errno, syscall: e.syscall, path: e.path };
}

/** Nothing staged survives a failure: the caller gets no pack to clean up. */
function discard(job, pack) {
  try {
    closePack(pack);
  } catch {
    // closing failed too; the unlink below still runs
  }
  if (pack !== null) {
    try {
      fs.rmSync(job.stage.packPath, { force: true });
      if (job.stage.copyPath) fs.rmSync(job.stage.copyPath, { force: true });
    } catch {
      // the store's start-up cleanup removes it
    }
  }
}

async function runFile(job) {
  let pack = null;
  try {
    const chunker = await openChunker(job);
    if (job.stage) pack = openPack(job.stage);
    const reply = chunkFile(job, chunker, pack);
    closePack(pack);
    return reply;
  } catch (err) {
    discard(job, pack);
    return { error: describe(err) };
  }
}

// A streaming session (chunk-session.ts): begin, data..., then end or abort. The first failure is
// kept and answered to every later message; its pack is removed at once.
let session = null;

// {op: 'fetch', url, headers, timeoutMs} within a session: this thread GETs the url itself and feeds
// the answer's body to the session, so a pulled dataset's bytes never cross the event loop (its
// socket buffers made the daemon's 30 MB heap run a full collection every few MiB; this isolate's is
// a few MB). Answered {size} when the body ended, {size, cut} when the connection failed midway (what
// arrived stays fed: the session's end keeps the shards that arrived whole), {status, body,
// retryAfter} for an answer other than 2xx (nothing fed), or {error} when the session failed.
// {op: 'cancel'} cuts a fetch under way.
const FETCH_BLOCK = 1 << 20;

function fetchInto(current, m) {
  return new Promise((resolve) => {
    const http = require(m.url.startsWith('https:') ? 'node:https' : 'node:http');
    const block = Buffer.allocUnsafe(FETCH_BLOCK);
    let fill = 0;
    let size = 0;
    let settled = false;
    const flush = () => {
      if (fill === 0 || current.error !== null) return;
      try {
        current.cutter.feed(block.subarray(0, fill));
      } catch (err) {
        current.error = describe(err);
        discard(current.job, current.pack);
      }
      fill = 0;
    };
    const done = (reply) => {
      if (settled) return;
      settled = true;
      current.request = null;
      if (reply.status === undefined) flush();
      resolve(current.error !== null ? { error: current.error } : { size, ...reply });
    };
    const req = http.request(m.url, { method: 'GET', headers: m.headers });
    current.request = req;
    req.setTimeout(m.timeoutMs, () => req.destroy(Object.assign(new Error('the connection went quiet'), { code: 'ETIMEDOUT' })));
    req.on('error', (err) => done({ cut: describe(err) }));
    req.on('response', (res) => {
      const status = res.statusCode || 0;
      if (status < 200 || status >= 300) {
        const pieces = [];
        res.on('data', (piece) => pieces.push(piece));
        res.on('end', () => done({ status, body: Buffer.concat(pieces).toString('utf8'), retryAfter: res.headers['retry-after'] ?? null }));
        res.on('error', (err) => done({ cut: describe(err) }));
        return;
      }
      res.on('data', (piece) => {
        if (current.error !== null) {
          req.destroy();
          return;
        }
        size += piece.length;
        for (let at = 0; at < piece.length; ) {
          const n = Math.min(FETCH_BLOCK - fill, piece.length - at);
          piece.copy(block, fill, at, at + n);
          fill += n;
          at += n;
          if (fill === FETCH_BLOCK) flush();
        }
      });
      res.on('end', () => done({}));
      res.on('error', (err) => done({ cut: describe(err) }));
      res.on('close', () => {
        if (!res.complete) done({ cut: { message: 'the answer was cut short', code: 'ECONNRESET' } });
      });
    });
    req.end();
  });
}

async function handleSession(m) {
  switch (m.op) {
    case 'begin': {
      session = { job: m, pack: null, cutter: null, error: null, request: null };
      try {
        const chunker = await openChunker(m);
        if (m.stage) session.pack = openPack(m.stage);
        session.cutter = createCutter(m, chunker, session.pack);
      } catch (err) {
        session.error = describe(err);
        discard(m, session.pack);
      }
      return session.error === null ? {} : { error: session.error };
    }
    case 'data': {
      if (session !== null && session.error === null) {
        try {
          session.cutter.feed(Buffer.from(m.buf, 0, m.len));
        } catch (err) {
          session.error = describe(err);
          discard(session.job, session.pack);
        }
      }
      const reply = session === null || session.error === null ? {} : { error: session.error };
      return [reply, m.buf];
    }
    case 'fetch': {
      if (session === null) return { error: { message: 'no chunking session is open' } };
      if (session.error !== null) return { error: session.error };
      return fetchInto(session, m);
    }
    case 'cancel': {
      if (session !== null && session.request !== null) session.request.destroy(Object.assign(new Error('the fetch was cancelled'), { code: 'ABORT_ERR' }));
      return {};
    }
    case 'end': {
      const current = session;
      session = null;
      if (current === null) return { error: { message: 'no chunking session is open' } };
      if (current.error !== null) return { error: current.error };
      try {
        const reply = current.cutter.finish();
        closePack(current.pack);
        return reply;
      } catch (err) {
        discard(current.job, current.pack);
        return { error: describe(err) };
      }
    }
    case 'abort': {
      if (session !== null && session.request !== null) session.request.destroy();
      if (session !== null && session.error === null) discard(session.job, session.pack);
      session = null;
      return {};
    }
  }
  return { error: { message: 'unknown chunking op ' + m.op } };
}

// One job at a time per thread: the caller holds the thread for a whole file or session, and a
// session's messages are answered in order.
parentPort.on('message', (m) => {
  const work = m.op === 'file' ? runFile(m) : m.op === 'assemble' ? Promise.resolve(runAssemble(m)) : handleSession(m);
  work.then((result) => {
    if (Array.isArray(result)) parentPort.postMessage({ id: m.id, buf: result[1], ...result[0] }, [result[1]]);
    else parentPort.postMessage({ id: m.id, ...result });
  });
});
`;
