// Checkpoints the metadata database's WAL on a thread of its own.
//
// SQLite's automatic checkpoint runs inside the COMMIT that pushes the WAL past 1,000 pages: it copies
// the WAL's pages into the database file and fsyncs both, on the connection's thread — ours is the
// main thread, so every request waits. Measured on 20,000 small-file versions committed in batches of
// ~250 (the group commit's usual size under load): 69 µs of main-thread time per version with the
// automatic checkpoint, 35 µs without it.
//
// So the main connection runs with wal_autocheckpoint=0 and this thread, with a connection of its
// own, runs PASSIVE checkpoints while writes keep going: a checkpoint copies only frames no reader
// still needs and never blocks the writer; once one has copied everything, the writer's next
// transaction rewinds the WAL. Checkpoints are throttled to one per MIN_INTERVAL_MS, which also lets a
// page changed by many commits in that time be copied once instead of once per automatic checkpoint.
//
// A writer rewinds the WAL only when it begins while every frame is in the database file, which under
// a steady stream of commits a concurrent checkpoint never achieves: the WAL would grow for as long as
// writes go on. So once the WAL passes RESTART_FRAMES, one checkpoint runs with the repository's calls
// held back (`barrier()`; the event loop keeps running, commits queue up and form a larger batch); it
// copies only what came since the last one, and the next commit rewinds the WAL.
//
// If the thread cannot run (it failed to start, it died), the main connection gets its automatic
// checkpoint back: the WAL never grows without bound.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const MIN_INTERVAL_MS = 100;
/** 16 MiB of 4 KiB pages */
const RESTART_FRAMES = 4096;

const SOURCE = `
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.sqliteModulePath);
const db = new Database(workerData.dbPath);
// A checkpoint syncs the WAL before copying and the database after, in FULL (the default) as in NORMAL.
db.pragma('busy_timeout = 5000');
parentPort.on('message', (m) => {
  if (m === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ ok: true, busy: result.busy, log: result.log, checkpointed: result.checkpointed });
  } catch (err) {
    parentPort.postMessage({ ok: false, message: String((err && err.message) || err) });
  }
});
`;

interface CheckpointReply {
  ok: boolean;
  busy?: number;
  log?: number;
  checkpointed?: number;
  message?: string;
}

export interface CheckpointStats {
  /** checkpoints completed by the thread */
  checkpoints: number;
  /** WAL frames the last checkpoint saw, and how many of them are in the database file now */
  lastLog: number;
  lastCheckpointed: number;
  /** checkpoints run with the repository's calls held back, so that the WAL could rewind */
  rewinds: number;
  /** why the thread stopped, when the main connection checkpoints again */
  failed: string | null;
}

export class SqliteCheckpointer {
  private worker: Worker | null = null;
  private running = false;
  private dirty = false;
  private timer: NodeJS.Timeout | null = null;
  private lastStart = 0;
  private closing: Promise<void> | null = null;
  private held: { promise: Promise<void>; release: () => void } | null = null;
  readonly stats: CheckpointStats = { checkpoints: 0, lastLog: 0, lastCheckpointed: 0, rewinds: 0, failed: null };

  /** `fallback` gives the main connection its automatic checkpoint back. */
  constructor(
    private readonly dbPath: string,
    private readonly fallback: () => void,
  ) {}

  /** The database changed: a checkpoint follows within MIN_INTERVAL_MS. */
  changed(): void {
    this.dirty = true;
    this.schedule();
  }

  /** While a rewinding checkpoint runs: resolves when repository calls may go on; otherwise null. */
  barrier(): Promise<void> | null {
    return this.held?.promise ?? null;
  }

  /** Stops the thread (its connection closes; the main connection, closing last, removes the WAL). */
  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.release();
    const worker = this.worker;
    this.closing = new Promise<void>((resolve) => {
      if (worker === null || this.stats.failed !== null) {
        resolve();
        return;
      }
      worker.ref(); // the caller awaits the exit: it must keep the process up until then
      worker.once('exit', () => resolve());
      worker.postMessage('close');
    });
    return this.closing;
  }

  private schedule(): void {
    if (!this.dirty || this.running || this.timer !== null || this.closing !== null || this.stats.failed !== null) return;
    const wait = Math.max(0, this.lastStart + MIN_INTERVAL_MS - Date.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      this.start();
    }, wait);
    this.timer.unref();
  }

  private start(): void {
    if (this.closing !== null || this.stats.failed !== null) return;
    this.dirty = false;
    this.running = true;
    this.lastStart = Date.now();
    if (this.stats.lastLog >= RESTART_FRAMES && this.held === null) {
      let release = () => {};
      const promise = new Promise<void>((resolve) => {
        release = resolve;
      });
      this.held = { promise, release };
      this.stats.rewinds += 1;
    }
    this.ensureWorker().postMessage('checkpoint');
  }

  private release(): void {
    const held = this.held;
    this.held = null;
    held?.release();
  }

  /** Started on the first change: a repository opened only to read never starts a thread. */
  private ensureWorker(): Worker {
    if (this.worker !== null) return this.worker;
    const worker = new Worker(SOURCE, {
      eval: true,
      workerData: { sqliteModulePath: createRequire(import.meta.url).resolve('better-sqlite3'), dbPath: this.dbPath },
    });
    worker.unref(); // a crash mid-checkpoint is harmless; the thread never keeps the process up
    worker.on('message', (reply: CheckpointReply) => this.onReply(reply));
    worker.on('error', (error) => this.fail(error.message));
    worker.on('exit', (code) => {
      if (this.closing === null) this.fail(`the checkpoint thread exited with code ${code}`);
    });
    this.worker = worker;
    return worker;
  }

  private onReply(reply: CheckpointReply): void {
    this.running = false;
    this.release();
    if (!reply.ok) {
      this.fail(reply.message ?? 'checkpoint failed');
      return;
    }
    this.stats.checkpoints += 1;
    this.stats.lastLog = reply.log ?? 0;
    this.stats.lastCheckpointed = reply.checkpointed ?? 0;
    // Frames a reader still needed stay behind: try again even if nothing new was committed.
    if (this.stats.lastCheckpointed < this.stats.lastLog) this.dirty = true;
    this.schedule();
  }

  private fail(reason: string): void {
    if (this.stats.failed !== null) return;
    this.stats.failed = reason;
    this.running = false;
    this.release();
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    try {
      this.fallback();
    } catch {
      // the main connection is closed already: nothing left to checkpoint for
    }
    void this.worker?.terminate();
  }
}
