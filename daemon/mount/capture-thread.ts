// The serving thread's side of the capture thread (capture-worker.ts): a MountSink whose writes,
// removals and renames run in the worker's engine. Requests made in one event-loop turn go in one
// message, and so do the replies: the reconciler releases captures in batches (a sweep), and each
// message is a wake-up of the thread that answers the kernel.
//
// A capture resolves only when the worker's engine has made it durable, as the in-process sink did,
// so the journal's contract (journal.ts) is unchanged. Content given as a stream (a dataset's bytes
// under a new name, read from the engine) stays on this thread with the in-process sink; so does
// everything when the worker cannot start (the mount then works as before, with a warning).
import { access } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { ERROR_CATALOGUE, type ErrorCode, StrataError } from '../../engine/errors.js';
import type { Actor } from '../../engine/types.js';
import type { CaptureReply, CaptureRequest, WorkerContent, WorkerError, WorkerMessage } from './capture-protocol.js';
import type { MountSink, RemoveResult, SinkContent, SinkResult } from './sink.js';

export interface CaptureThread extends MountSink {
  /** A request touching `path` is in the worker: a record of it in the history may be ours. */
  busy(path: string): boolean;
  /** Closes the worker's engine and ends the thread (after the mount has flushed its captures). */
  close(): Promise<void>;
}

interface Pending {
  request: CaptureRequest;
  transfer: ArrayBuffer[];
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

const START_TIMEOUT_MS = 60_000;
const CLOSE_TIMEOUT_MS = 60_000;

/** The compiled worker next to this module; null when running from the TypeScript sources (tests). */
async function workerFile(): Promise<URL | null> {
  const url = new URL('./capture-worker.js', import.meta.url);
  try {
    await access(fileURLToPath(url));
    return url;
  } catch {
    return null;
  }
}

export function rebuildError(error: WorkerError): Error {
  if (error.name === 'StrataError' && error.code !== undefined && error.code in ERROR_CATALOGUE) {
    return new StrataError(error.code as ErrorCode, { message: error.message, ...(error.details ? { details: error.details } : {}) });
  }
  return Object.assign(new Error(error.message), {
    ...(error.code === undefined ? {} : { code: error.code }),
    ...(error.errno === undefined ? {} : { errno: error.errno }),
    ...(error.syscall === undefined ? {} : { syscall: error.syscall }),
  });
}

/**
 * Starts the capture thread for a project; resolves null (use the in-process sink) when the compiled
 * worker is missing or its engine does not open.
 */
export async function startCaptureThread(options: { home: string; projectId: string; actor: Actor; inProcess: MountSink; logger: Logger }): Promise<CaptureThread | null> {
  const file = await workerFile();
  if (file === null) return null;
  const worker = new Worker(file, { workerData: { home: options.home, projectId: options.projectId, actor: options.actor } });
  const started = await new Promise<WorkerError | null>((resolve) => {
    const timer = setTimeout(() => resolve({ name: 'Error', message: `the capture thread did not start within ${START_TIMEOUT_MS} ms` }), START_TIMEOUT_MS);
    const done = (value: WorkerError | null) => {
      clearTimeout(timer);
      worker.off('message', onMessage);
      worker.off('error', onError);
      resolve(value);
    };
    const onMessage = (message: WorkerMessage) => {
      if (message.kind === 'ready') done(null);
      else if (message.kind === 'failed') done(message.error);
    };
    const onError = (error: Error) => done({ name: error.name, message: error.message });
    worker.on('message', onMessage);
    worker.on('error', onError);
  });
  if (started !== null) {
    options.logger.warn({ err: started.message }, 'mount: the capture thread did not start; capturing on the serving thread');
    await worker.terminate();
    return null;
  }
  return new WorkerCaptureThread(worker, options.inProcess, options.logger);
}

class WorkerCaptureThread implements CaptureThread {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private outbox: Pending[] = [];
  /** paths with requests in the worker → how many */
  private readonly paths = new Map<string, number>();
  private failed: Error | null = null;
  private closing: Promise<void> | null = null;
  private onClosed: ((error?: WorkerError) => void) | null = null;

  constructor(
    private readonly worker: Worker,
    private readonly inProcess: MountSink,
    private readonly logger: Logger,
  ) {
    worker.on('message', (message: WorkerMessage) => this.receive(message));
    worker.on('error', (error) => this.fail(error));
    worker.on('exit', (code) => this.fail(new Error(`the capture thread exited (code ${code})`)));
    // Idle, the worker must not keep the process alive (the daemon decides when it ends).
    worker.unref();
  }

  write(path: string, content: SinkContent, executable: boolean, symlink = false): Promise<SinkResult> {
    if (this.failed !== null || !isWorkerContent(content)) return this.inProcess.write(path, content, executable, symlink);
    // A buffer that owns its whole ArrayBuffer moves to the worker; anything else is copied first.
    const bytes = content instanceof Uint8Array && (content.byteOffset !== 0 || content.byteLength !== content.buffer.byteLength || !(content.buffer instanceof ArrayBuffer)) ? new Uint8Array(content) : content;
    const transfer = bytes instanceof Uint8Array ? [bytes.buffer as ArrayBuffer] : [];
    return this.submit({ id: this.nextId++, op: 'write', path, content: bytes, executable, symlink }, transfer) as Promise<SinkResult>;
  }

  remove(path: string, base?: string): Promise<RemoveResult> {
    if (this.failed !== null) return this.inProcess.remove(path, base);
    return this.submit({ id: this.nextId++, op: 'remove', path, ...(base === undefined ? {} : { base }) }, []) as Promise<RemoveResult>;
  }

  rename(from: string, to: string): Promise<SinkResult> {
    if (this.failed !== null) return this.inProcess.rename(from, to);
    return this.submit({ id: this.nextId++, op: 'rename', from, to }, []) as Promise<SinkResult>;
  }

  busy(path: string): boolean {
    return this.paths.has(path);
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.failed !== null) return;
      this.flushOutbox();
      const closed = new Promise<WorkerError | undefined>((resolve) => {
        this.onClosed = resolve;
      });
      this.worker.ref();
      this.worker.postMessage({ kind: 'close' });
      const timer = new Promise<WorkerError>((resolve) => setTimeout(() => resolve({ name: 'Error', message: 'timed out' }), CLOSE_TIMEOUT_MS).unref());
      const error = await Promise.race([closed, timer]);
      if (error !== undefined) this.logger.warn({ err: error.message }, 'mount: closing the capture thread failed');
      this.failed = new StrataError('SHUTTING_DOWN');
      await this.worker.terminate();
    })();
    return this.closing;
  }

  private submit(request: CaptureRequest, transfer: ArrayBuffer[]): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const pending: Pending = { request, transfer, resolve, reject };
      this.pending.set(request.id, pending);
      for (const path of pathsOf(request)) this.paths.set(path, (this.paths.get(path) ?? 0) + 1);
      if (this.outbox.length === 0) setImmediate(() => this.flushOutbox());
      this.outbox.push(pending);
      if (this.pending.size === 1) this.worker.ref();
    });
  }

  private flushOutbox(): void {
    const batch = this.outbox;
    this.outbox = [];
    if (batch.length === 0 || this.failed !== null) return;
    try {
      this.worker.postMessage(
        { kind: 'requests', requests: batch.map((p) => p.request) },
        batch.flatMap((p) => p.transfer),
      );
    } catch (error) {
      for (const pending of batch) this.settle(pending.request.id, { id: pending.request.id, error: { name: 'Error', message: (error as Error).message } });
    }
  }

  private receive(message: WorkerMessage): void {
    if (message.kind === 'replies') {
      for (const reply of message.replies) this.settle(reply.id, reply);
    } else if (message.kind === 'closed') {
      this.onClosed?.(message.error);
    }
  }

  private settle(id: number, reply: CaptureReply): void {
    const pending = this.pending.get(id);
    if (pending === undefined) return;
    this.pending.delete(id);
    for (const path of pathsOf(pending.request)) {
      const left = (this.paths.get(path) ?? 1) - 1;
      if (left === 0) this.paths.delete(path);
      else this.paths.set(path, left);
    }
    if (this.pending.size === 0) this.worker.unref();
    if (reply.error !== undefined) pending.reject(rebuildError(reply.error));
    else pending.resolve(reply.result);
  }

  /** The worker is gone: what it held fails (the reconciler retries, on this thread from now on). */
  private fail(error: Error): void {
    if (this.failed === null && this.closing === null) this.logger.error({ err: error.message }, 'mount: the capture thread failed; capturing on the serving thread');
    this.failed ??= error;
    this.onClosed?.({ name: error.name, message: error.message });
    const failure = new StrataError('STORAGE_ERROR', { message: 'The capture thread failed', cause: error });
    for (const id of [...this.pending.keys()]) {
      const pending = this.pending.get(id)!;
      this.pending.delete(id);
      pending.reject(failure);
    }
    this.paths.clear();
    this.outbox = [];
  }
}

function pathsOf(request: CaptureRequest): string[] {
  return request.op === 'rename' ? [request.from, request.to] : [request.path];
}

function isWorkerContent(content: SinkContent): content is WorkerContent {
  return content instanceof Uint8Array || (typeof content === 'object' && content !== null && 'file' in content);
}
