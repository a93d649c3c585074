// What `strata serve` and `strata daemon` share: running a service in the foreground until a signal.

import { usageError } from './errors.js';

const LISTEN = /^(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+):(\d{1,5})$/;

/** `flag` is the option the address came from, for the message: --listen, --metrics-listen. */
export function checkListen(listen: string | undefined, flag = '--listen'): void {
  if (listen === undefined) return;
  const match = LISTEN.exec(listen);
  if (!match || Number(match[2]) > 65535) throw usageError(`${flag} must be HOST:PORT, got '${listen}'`, { field: flag.replace(/^--/, '') });
}

/** How runUntilSignal reports what it does: by default one `strata: ...` line on stderr. */
export type ForegroundLog = (level: 'info' | 'error', message: string) => void;

const plainLog: ForegroundLog = (_level, message) => void process.stderr.write(`strata: ${message}\n`);

export interface ForegroundOptions<T> {
  start: () => Promise<T>;
  stop: (service: T) => Promise<void>;
  /** a stop that hangs (a client holding a stream, a mount that will not let go) must not keep a stopped service alive */
  timeoutMs: number;
  /** what stopping does, for the log line: "closing (finishing requests in flight)" */
  stopping: string;
  /**
   * How long a signal during start waits for start to finish (then the service is stopped as usual)
   * before the process exits 1; default `timeoutMs`.
   */
  startGraceMs?: number;
  /** where its lines go (`strata serve --log-format json`: JSON records); default plain stderr lines */
  log?: ForegroundLog;
}

/**
 * Starts the service and, on SIGTERM/SIGINT, stops it and exits: 0, or 1 if stopping fails or takes
 * longer than `timeoutMs`; a second signal exits at once. The handlers go in before the service
 * starts: a supervisor (or a test) may signal as soon as it reads the "listening on" line, and a
 * signal with no handler kills the process uncleanly. Resolves with the running service, or with
 * undefined when a signal arrived during start (the stop is then under way). A signal during start
 * does not wait for a start that hangs (a bucket that accepts connections and never answers): after
 * `startGraceMs` the process exits 1. If start fails, the handlers are removed and the error is thrown.
 */
export async function runUntilSignal<T>(options: ForegroundOptions<T>): Promise<T | undefined> {
  const log = options.log ?? plainLog;
  let service: T | undefined;
  let stopping = false;
  let startGrace: NodeJS.Timeout | undefined;
  const finish = (running: T) => {
    const timer = setTimeout(() => {
      log('error', 'stop timed out, exiting');
      process.exit(1);
    }, options.timeoutMs);
    timer.unref();
    options.stop(running).then(
      () => process.exit(0),
      (error: unknown) => {
        log('error', `stop failed: ${error instanceof Error ? error.message : String(error)}`);
        process.exit(1);
      },
    );
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      log('error', `${signal} again, exiting without waiting`);
      process.exit(1);
    }
    stopping = true;
    if (service !== undefined) {
      log('info', `${signal}, ${options.stopping}...`);
      finish(service);
      return;
    }
    // Still starting: a start that finishes soon is stopped cleanly right after it returns; one that
    // hangs (a bucket that never answers) held the process until a second signal.
    log('info', `${signal} during start-up, stopping`);
    startGrace = setTimeout(() => {
      log('error', 'start-up did not finish, exiting');
      process.exit(1);
    }, options.startGraceMs ?? options.timeoutMs);
    startGrace.unref();
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
    clearTimeout(startGrace);
    finish(service);
    return undefined;
  }
  return service;
}
