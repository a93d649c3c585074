// What `strata serve` and `strata daemon` share: running a service in the foreground until a signal.

import { usageError } from './errors.js';

const LISTEN = /^(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+):(\d{1,5})$/;

export function checkListen(listen: string | undefined): void {
  if (listen === undefined) return;
  const match = LISTEN.exec(listen);
  if (!match || Number(match[2]) > 65535) throw usageError(`--listen must be HOST:PORT, got '${listen}'`, { field: 'listen' });
}

export interface ForegroundOptions<T> {
  start: () => Promise<T>;
  stop: (service: T) => Promise<void>;
  /** a stop that hangs (a client holding a stream, a mount that will not let go) must not keep a stopped service alive */
  timeoutMs: number;
  /** what stopping does, for the log line: "closing (finishing requests in flight)" */
  stopping: string;
}

/**
 * Starts the service and, on SIGTERM/SIGINT, stops it and exits: 0, or 1 if stopping fails or takes
 * longer than `timeoutMs`; a second signal exits at once. The handlers go in before the service
 * starts: a supervisor (or a test) may signal as soon as it reads the "listening on" line, and a
 * signal with no handler kills the process uncleanly. Resolves with the running service, or with
 * undefined when a signal arrived during start (the stop is then under way). If start fails, the
 * handlers are removed and the error is thrown.
 */
export async function runUntilSignal<T>(options: ForegroundOptions<T>): Promise<T | undefined> {
  let service: T | undefined;
  let stopping = false;
  const finish = (running: T) => {
    const timer = setTimeout(() => {
      process.stderr.write('strata: stop timed out, exiting\n');
      process.exit(1);
    }, options.timeoutMs);
    timer.unref();
    options.stop(running).then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`strata: stop failed: ${error instanceof Error ? error.message : String(error)}\n`);
        process.exit(1);
      },
    );
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      process.stderr.write(`strata: ${signal} again, exiting without waiting\n`);
      process.exit(1);
    }
    stopping = true;
    process.stderr.write(`strata: ${signal}, ${options.stopping}...\n`);
    if (service !== undefined) finish(service); // else: stopped right after start returns
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    service = await options.start();
  } catch (error) {
    process.removeListener('SIGTERM', onSignal);
    process.removeListener('SIGINT', onSignal);
    throw error;
  }
  if (stopping) {
    finish(service);
    return undefined;
  }
  return service;
}
