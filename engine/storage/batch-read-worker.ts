// Reading and verifying many small objects off the event loop (a git export reads tens of thousands
// in a row: on the main thread that was ~300 ms of SQLite reads and BLAKE3 per 1,000-snapshot export,
// the largest cost left). A worker thread with its own read connection to the object pack reads a
// window of objects (pack rows, or loose files for the few larger ones), verifies each against its
// hash, and hands them back packed into one transferred ArrayBuffer. The caller asks for the next
// window while it consumes the current one, so reading overlaps with writing the export.
//
// The worker's code is a string for the same reason as the hash worker's (hash-worker-source.ts).
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { StrataError } from '../errors.js';
import type { ContentHash } from '../types.js';

const SOURCE = `
'use strict';
const fs = require('node:fs');
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.sqliteModulePath);
const { blake3 } = require(workerData.blakeModulePath);
const db = new Database(workerData.packPath);
db.pragma('busy_timeout = 5000');
db.pragma('mmap_size = ' + workerData.mapBytes);
if (workerData.mapBytes === 0) db.pragma('cache_size = -2048');
// Up to 64 rows per statement: one lookup per hash was 166-212 ms for the 20,939 objects of the
// 1,000-snapshot export history, IN lists of 64 took 112-128 ms (the statement overhead, not the
// B-tree, dominated).
const GROUP = 64;
const byCount = new Map();
const statementFor = (n) => {
  let statement = byCount.get(n);
  if (statement === undefined) {
    statement = db.prepare('SELECT hash, data FROM objects WHERE hash IN (' + new Array(n).fill('?').join(',') + ')').raw();
    byCount.set(n, statement);
  }
  return statement;
};
// Dataset shards inside pack files (local-content-store-shard-packs.ts); a pack compacted away between
// the lookup and the open is looked up once more.
const entryStmt = db.prepare('SELECT pack, offset, size FROM pack_entries WHERE hash = ?');
function readShard(hash) {
  for (let attempt = 0; ; attempt++) {
    const e = entryStmt.get(hash);
    if (e === undefined) return undefined;
    let fd;
    try {
      fd = fs.openSync(workerData.objectsDir + '/packs/' + e.pack, 'r');
    } catch (err) {
      if (err && err.code === 'ENOENT' && attempt === 0) continue;
      throw err;
    }
    try {
      const out = Buffer.allocUnsafe(e.size);
      let done = 0;
      while (done < e.size) {
        const n = fs.readSync(fd, out, done, e.size - done, e.offset + done);
        if (n === 0) return out.subarray(0, done);
        done += n;
      }
      return out;
    } finally {
      fs.closeSync(fd);
    }
  }
}
parentPort.on('message', (m) => {
  try {
    const packed = new Map();
    for (let i = 0; i < m.hashes.length; i += GROUP) {
      const group = m.hashes.slice(i, i + GROUP);
      for (const [hash, data] of statementFor(group.length).all(group)) packed.set(hash, data);
    }
    const parts = [];
    let total = 0;
    for (let i = 0; i < m.hashes.length; i++) {
      const hash = m.hashes[i];
      let data = packed.get(hash);
      if (data === undefined) data = readShard(hash);
      if (data === undefined) {
        try {
          data = fs.readFileSync(workerData.objectsDir + '/' + hash.slice(7, 9) + '/' + hash.slice(9));
        } catch (err) {
          if (err && err.code === 'ENOENT') { parentPort.postMessage({ id: m.id, error: { code: 'CONTENT_NOT_FOUND', hash } }); return; }
          throw err;
        }
      }
      const actual = 'blake3:' + blake3(data).toString('hex');
      if (actual !== hash) { parentPort.postMessage({ id: m.id, error: { code: 'CONTENT_CORRUPT', hash, actual } }); return; }
      parts.push(data);
      total += data.length;
    }
    const buf = new ArrayBuffer(total);
    const view = new Uint8Array(buf);
    const lengths = [];
    let at = 0;
    for (const part of parts) { view.set(part, at); at += part.length; lengths.push(part.length); }
    parentPort.postMessage({ id: m.id, buf, lengths }, [buf]);
  } catch (err) {
    parentPort.postMessage({ id: m.id, error: { code: 'STORAGE_ERROR', message: String(err && err.message || err) } });
  }
});
`;

interface Reply {
  id: number;
  buf?: ArrayBuffer;
  lengths?: number[];
  error?: { code: 'CONTENT_NOT_FOUND' | 'CONTENT_CORRUPT' | 'STORAGE_ERROR'; hash?: ContentHash; actual?: string; message?: string };
}

/** Two threads: with the caller keeping two windows in flight, both cores read and verify. */
const THREADS = 2;
const MAP_BYTES = 256 * 1024 * 1024;

export interface BatchReaderOptions {
  /**
   * Read the pack through a memory map of up to this many bytes (default 256 MiB: a git export reads
   * the same objects again and again) or, with 0, through a 2 MiB page cache: a bulk transfer reads
   * each object once, and mapped pages it touched count in the process's RSS until the map goes.
   */
  mapBytes?: number;
  threads?: number;
}

export class BatchReader {
  private readonly threads: number;
  private readonly mapBytes: number;
  private readonly workers: Array<Worker | null>;
  private turn = 0;
  private nextId = 1;
  private readonly pending = new Map<number, { hashes: ContentHash[]; worker: Worker; resolve(value: Map<ContentHash, Buffer>): void; reject(error: unknown): void }>();

  constructor(
    private readonly packPath: string,
    /** loose objects live at <objectsDir>/<2 hex>/<62 hex> (LooseObjects.pathOf) */
    private readonly objectsDir: string,
    options: BatchReaderOptions = {},
  ) {
    this.threads = options.threads ?? THREADS;
    this.mapBytes = options.mapBytes ?? MAP_BYTES;
    this.workers = Array.from({ length: this.threads }, () => null);
  }

  /** The objects, each verified; CONTENT_NOT_FOUND / CONTENT_CORRUPT like readBuffer. */
  read(hashes: ContentHash[]): Promise<Map<ContentHash, Buffer>> {
    const slot = this.turn;
    this.turn = (this.turn + 1) % this.threads;
    const worker = this.ensureWorker(slot);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      worker.ref();
      this.pending.set(id, { hashes, resolve, reject, worker });
      // Loose paths are computed in the worker, only for the few objects not in the pack: building one
      // per hash here was ~6% of an export's main-thread time (path.join for 21,000 packed objects).
      worker.postMessage({ id, hashes });
    });
  }

  async close(): Promise<void> {
    const workers = this.workers.splice(0, this.threads, ...Array.from({ length: this.threads }, () => null));
    for (const worker of workers) if (worker !== null) await worker.terminate();
    for (const p of this.pending.values()) p.reject(new StrataError('SHUTTING_DOWN'));
    this.pending.clear();
  }

  private ensureWorker(slot: number): Worker {
    const existing = this.workers[slot];
    if (existing !== null && existing !== undefined) return existing;
    const require = createRequire(import.meta.url);
    const worker = new Worker(SOURCE, {
      eval: true,
      workerData: { packPath: this.packPath, objectsDir: this.objectsDir, mapBytes: this.mapBytes, sqliteModulePath: require.resolve('better-sqlite3'), blakeModulePath: require.resolve('@napi-rs/blake-hash') },
    });
    worker.unref();
    worker.on('message', (reply: Reply) => this.onReply(reply));
    const fail = (cause: unknown) => {
      if (this.workers[slot] === worker) this.workers[slot] = null;
      for (const [id, p] of this.pending) {
        if (p.worker !== worker) continue;
        this.pending.delete(id);
        p.reject(new StrataError('STORAGE_ERROR', { message: 'The object reader thread failed', cause }));
      }
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`exited with code ${code}`)));
    this.workers[slot] = worker;
    return worker;
  }

  private onReply(reply: Reply): void {
    const request = this.pending.get(reply.id);
    if (request === undefined) return;
    this.pending.delete(reply.id);
    if (![...this.pending.values()].some((p) => p.worker === request.worker)) request.worker.unref();
    const { error } = reply;
    if (error !== undefined) {
      if (error.code === 'CONTENT_NOT_FOUND') request.reject(new StrataError('CONTENT_NOT_FOUND', { details: { hash: error.hash } }));
      else if (error.code === 'CONTENT_CORRUPT') {
        request.reject(new StrataError('CONTENT_CORRUPT', { message: `Object ${error.hash} hashes to ${error.actual}`, details: { expected: error.hash, actual: error.actual } }));
      } else request.reject(new StrataError('STORAGE_ERROR', { message: `Reading objects failed: ${error.message}` }));
      return;
    }
    const found = new Map<ContentHash, Buffer>();
    let at = 0;
    for (const [i, length] of reply.lengths!.entries()) {
      found.set(request.hashes[i]!, Buffer.from(reply.buf!, at, length));
      at += length;
    }
    request.resolve(found);
  }
}
