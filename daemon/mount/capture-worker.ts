// The capture thread of a mount (started by capture-thread.ts): its own engine on the same home, so
// hashing, storing and the SQLite commit of each capture run beside the thread that answers the kernel
// instead of on it. On the 2-core reference machine, tar and the kernel keep one core busy with the
// serving thread in lock step; the captures (~175 us of engine work per small file, measured) used to
// be paid on that same thread and now take the other core.
//
// Two engines on one home is the case the store and the repository already handle for two processes
// (SQLite WAL, one writer at a time with a busy timeout; objects younger than the GC grace period are
// never collected, which covers a capture's object before its record commits).
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { openLocalEngine } from '../../engine/local.js';
import { createEngineSink } from './sink.js';
import type { CaptureReply, CaptureRequest, CaptureWorkerData, WorkerError, WorkerMessage } from './capture-protocol.js';

const port = parentPort;
if (port === null) throw new TypeError('capture-worker.js runs as a worker thread');
const data = workerData as CaptureWorkerData;

/**
 * This thread yields to the one answering the kernel: a tool waits for every answer, never for a
 * capture (closed files are journaled first). Linux applies setpriority() to one thread when given its
 * id, and threads started from here later (the engine's own workers) inherit the value. Best effort:
 * elsewhere (or without /proc) captures run at normal priority.
 */
function lowerPriority(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0 && tid !== process.pid) setPriority(tid, CAPTURE_NICE);
  } catch {
    // not Linux, or not permitted: keep the default priority
  }
}
// Nice 5: weight 335 against 1,024 for a normal thread, so captures still get about a quarter of a core
// when the machine is saturated by others. (At 10, a restart's journal replay through this thread took
// over 20 s in the crash test while other test files ran beside it; the replay now runs in-process.)
const CAPTURE_NICE = 5;
lowerPriority();

function serialize(error: unknown): WorkerError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const e = error as Error & { code?: unknown; errno?: unknown; syscall?: unknown; details?: unknown };
  return {
    name: e.name,
    message: e.message,
    ...(typeof e.code === 'string' ? { code: e.code } : {}),
    ...(typeof e.errno === 'number' ? { errno: e.errno } : {}),
    ...(typeof e.syscall === 'string' ? { syscall: e.syscall } : {}),
    ...(e.details !== undefined && e.details !== null && typeof e.details === 'object' ? { details: e.details as Record<string, unknown> } : {}),
  };
}

try {
  const local = await openLocalEngine({ home: data.home });
  const sink = createEngineSink(local.engine, data.projectId, data.actor);
  // Replies finished in one turn travel in one message (a postMessage costs the serving thread a wake-up).
  let replies: CaptureReply[] = [];
  const send = () => {
    const out = replies;
    replies = [];
    port.postMessage({ kind: 'replies', replies: out } satisfies WorkerMessage);
  };
  const reply = (message: CaptureReply) => {
    if (replies.length === 0) setImmediate(send);
    replies.push(message);
  };
  const handle = async (request: CaptureRequest) => {
    try {
      if (request.op === 'write') {
        const result = await sink.write(request.path, request.content, request.executable, request.symlink);
        reply({ id: request.id, result });
      } else if (request.op === 'remove') {
        reply({ id: request.id, result: await sink.remove(request.path, request.base) });
      } else {
        reply({ id: request.id, result: await sink.rename(request.from, request.to) });
      }
    } catch (error) {
      reply({ id: request.id, error: serialize(error) });
    }
  };
  port.on('message', (message: { kind: 'requests'; requests: CaptureRequest[] } | { kind: 'close' }) => {
    if (message.kind === 'requests') {
      for (const request of message.requests) void handle(request);
      return;
    }
    // Everything submitted has been answered (the mount flushed first): close the engine, then go.
    local.close().then(
      () => port.postMessage({ kind: 'closed' } satisfies WorkerMessage),
      (error: unknown) => port.postMessage({ kind: 'closed', error: serialize(error) } satisfies WorkerMessage),
    );
  });
  port.postMessage({ kind: 'ready' } satisfies WorkerMessage);
} catch (error) {
  port.postMessage({ kind: 'failed', error: serialize(error) } satisfies WorkerMessage);
}
