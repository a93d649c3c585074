// Digest threads for the S3 store: BLAKE3 of a whole upload, fed part by part, plus the MD5 and
// SHA-256 of each part, all computed off the event loop.
//
// Why not the shared hash workers (hash-worker-pool.ts): their streaming sessions exist to stage a
// local temp file (`begin` creates one, `end` fsyncs it); an upload to S3 has no local copy. Their
// whole-file request is reused where it fits (putFile's first pass, s3-content-store.ts).
//
// Why MD5 and SHA-256 per part: the MD5 becomes Content-MD5 and the SHA-256 the signed
// x-amz-content-sha256, so S3 itself checks each part and object against what we hashed
// (BadDigest / XAmzContentSHA256Mismatch instead of storing other bytes). Left to the SDK, it would
// hash every 16 MiB part on the event loop for the signature (~10-30 ms each on this machine).
//
// Protocol (every request carries `id`, every reply `{id, ...}` or `{id, error}`):
//  - part {sid, buf, len, sums}: feed buf[0, len) to session sid's BLAKE3 (created on first use); with
//    `sums`, also reply md5 (base64) and sha256 (hex) of this part. The ArrayBuffer is transferred in
//    and back (zero-copy) so the caller can upload from it.
//  - end {sid}: reply the session's hex BLAKE3; abort {sid}: drop it.
//  - whole {buf, len}: BLAKE3 hex, md5 and sha256 of one buffer; the buffer comes back.
// Messages to one thread are handled in order, so a session is pinned to its thread.
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { StrataError } from '../errors.js';

const DIGEST_WORKER_SOURCE = `
'use strict';
const crypto = require('node:crypto');
const { parentPort, workerData } = require('node:worker_threads');
const { Blake3Hasher, blake3 } = require(workerData.blakeModulePath);
try {
  require('node:os').setPriority(0, 5); // background work: the event loop wins when cores are contended
} catch {}
const sessions = new Map();
function sums(view) {
  return {
    md5: crypto.createHash('md5').update(view).digest('base64'),
    sha256: crypto.createHash('sha256').update(view).digest('hex'),
  };
}
function handle(m) {
  switch (m.op) {
    case 'part': {
      let hasher = sessions.get(m.sid);
      if (hasher === undefined) sessions.set(m.sid, (hasher = new Blake3Hasher()));
      const view = Buffer.from(m.buf, 0, m.len);
      hasher.update(view);
      return Object.assign({ buf: m.buf }, m.sums ? sums(view) : {});
    }
    case 'end': {
      const hasher = sessions.get(m.sid) || new Blake3Hasher();
      sessions.delete(m.sid);
      return { hash: hasher.digest('hex') };
    }
    case 'abort':
      sessions.delete(m.sid);
      return {};
    case 'whole': {
      const view = Buffer.from(m.buf, 0, m.len);
      return Object.assign({ buf: m.buf, hash: blake3(view).toString('hex') }, sums(view));
    }
    default:
      throw new Error('unknown digest op ' + m.op);
  }
}
parentPort.on('message', (m) => {
  let reply;
  try {
    reply = handle(m);
  } catch (err) {
    reply = { error: String((err && err.message) || err) };
  }
  parentPort.postMessage(Object.assign({ id: m.id }, reply), reply.buf ? [reply.buf] : []);
});
`;

export interface DigestReply {
  id: number;
  error?: string;
  buf?: ArrayBuffer;
  hash?: string;
  md5?: string;
  sha256?: string;
}

interface Slot {
  worker: Worker;
  pending: Map<number, { resolve(reply: DigestReply): void; reject(error: unknown): void }>;
  sessions: number;
}

export class DigestPool {
  private readonly slots: Slot[] = [];
  private readonly blakeModulePath = createRequire(import.meta.url).resolve('@napi-rs/blake-hash');
  private nextId = 1;
  private closed = false;

  constructor(private readonly size: number = Math.min(2, availableParallelism())) {}

  openSession(): DigestSession {
    const slot = this.pick();
    slot.sessions += 1;
    return new DigestSession(this, slot, this.nextId++);
  }

  /** BLAKE3, MD5 and SHA-256 of one buffer we own (it is transferred, and returned in `buf`). */
  async whole(buf: ArrayBuffer, len: number): Promise<Required<Pick<DigestReply, 'buf' | 'hash' | 'md5' | 'sha256'>>> {
    const reply = await this.request(this.pick(), { op: 'whole', buf, len }, [buf]);
    return { buf: reply.buf!, hash: reply.hash!, md5: reply.md5!, sha256: reply.sha256! };
  }

  request(slot: Slot, message: Record<string, unknown>, transfer: ArrayBuffer[] = []): Promise<DigestReply> {
    if (this.closed) return Promise.reject(new StrataError('SHUTTING_DOWN', { message: 'The content store is closed' }));
    const id = this.nextId++;
    return new Promise<DigestReply>((resolve, reject) => {
      // Keep the process alive only while a thread owes us an answer.
      if (slot.pending.size === 0) slot.worker.ref();
      slot.pending.set(id, { resolve, reject });
      try {
        slot.worker.postMessage({ ...message, id }, transfer);
      } catch (error) {
        slot.pending.delete(id);
        if (slot.pending.size === 0) slot.worker.unref();
        reject(error);
      }
    });
  }

  release(slot: Slot): void {
    slot.sessions -= 1;
  }

  async close(): Promise<void> {
    this.closed = true;
    const slots = this.slots.splice(0);
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
    for (const slot of slots) this.failAll(slot, new StrataError('SHUTTING_DOWN', { message: 'The content store is closed' }));
  }

  private pick(): Slot {
    if (this.closed) throw new StrataError('SHUTTING_DOWN', { message: 'The content store is closed' });
    let best: Slot | undefined;
    for (const slot of this.slots) if (best === undefined || load(slot) < load(best)) best = slot;
    // Threads start lazily: a store that only sees small objects hashes them in place and never starts one.
    if (best === undefined || (load(best) > 0 && this.slots.length < this.size)) return this.spawn();
    return best;
  }

  private spawn(): Slot {
    const worker = new Worker(DIGEST_WORKER_SOURCE, { eval: true, workerData: { blakeModulePath: this.blakeModulePath } });
    worker.unref();
    const slot: Slot = { worker, pending: new Map(), sessions: 0 };
    worker.on('message', (reply: DigestReply) => {
      const pending = slot.pending.get(reply.id);
      if (pending === undefined) return;
      slot.pending.delete(reply.id);
      if (slot.pending.size === 0) worker.unref();
      if (reply.error === undefined) pending.resolve(reply);
      else pending.reject(new StrataError('INTERNAL', { message: `A digest thread failed: ${reply.error}` }));
    });
    const fail = (error: StrataError) => {
      const index = this.slots.indexOf(slot);
      if (index >= 0) this.slots.splice(index, 1);
      this.failAll(slot, error);
    };
    worker.on('error', (error) => fail(new StrataError('INTERNAL', { message: 'A digest thread failed', cause: error })));
    worker.on('exit', (code) => fail(this.closed ? new StrataError('SHUTTING_DOWN') : new StrataError('INTERNAL', { message: `A digest thread exited (code ${code})` })));
    this.slots.push(slot);
    return slot;
  }

  private failAll(slot: Slot, error: unknown): void {
    for (const pending of slot.pending.values()) pending.reject(error);
    slot.pending.clear();
  }
}

function load(slot: Slot): number {
  return slot.pending.size + slot.sessions;
}

/** One upload's running BLAKE3 on one thread; parts must be sent in order. */
export class DigestSession {
  private finished = false;

  constructor(
    private readonly pool: DigestPool,
    private readonly slot: Slot,
    private readonly sid: number,
  ) {}

  /** Hash buf[0, len) into the session (buf is transferred and comes back in the reply); with `sums`, its MD5 and SHA-256 too. */
  part(buf: ArrayBuffer, len: number, sums: boolean): Promise<DigestReply> {
    return this.pool.request(this.slot, { op: 'part', sid: this.sid, buf, len, sums }, [buf]);
  }

  /** The hex BLAKE3 of every part sent. */
  async end(): Promise<string> {
    this.finish();
    const reply = await this.pool.request(this.slot, { op: 'end', sid: this.sid });
    return reply.hash!;
  }

  /** Never throws: it runs on failure paths. */
  abort(): void {
    if (this.finished) return;
    this.finish();
    this.pool.request(this.slot, { op: 'abort', sid: this.sid }).catch(() => {
      // the thread is gone, and the session with it
    });
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.pool.release(this.slot);
  }
}

/**
 * BLAKE3 of a stream of small pieces (an S3 GET), off the event loop: pieces are copied into 1 MiB
 * blocks and sent to a session, at most two blocks out at once.
 */
export class StreamHasher {
  private static readonly BLOCK = 1 << 20;
  private block = new Uint8Array(StreamHasher.BLOCK);
  private fill = 0;
  private readonly inflight: Promise<DigestReply>[] = [];
  private readonly session: DigestSession;

  constructor(pool: DigestPool) {
    this.session = pool.openSession();
  }

  async write(piece: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < piece.length) {
      const n = Math.min(StreamHasher.BLOCK - this.fill, piece.length - offset);
      this.block.set(piece.subarray(offset, offset + n), this.fill);
      this.fill += n;
      offset += n;
      if (this.fill === StreamHasher.BLOCK) await this.flush();
    }
  }

  async end(): Promise<string> {
    if (this.fill > 0) await this.flush();
    await Promise.all(this.inflight.splice(0));
    return this.session.end();
  }

  async abort(): Promise<void> {
    await Promise.allSettled(this.inflight.splice(0));
    this.session.abort();
  }

  private async flush(): Promise<void> {
    const sent = this.session.part(this.block.buffer as ArrayBuffer, this.fill, false);
    sent.catch(() => {}); // marked handled: the failure is reported when this one is awaited
    this.inflight.push(sent);
    this.block = new Uint8Array(StreamHasher.BLOCK);
    this.fill = 0;
    if (this.inflight.length >= 2) await this.inflight.shift();
  }
}
