// Per-path rows the mount keeps in the daemon's state DB (modes and owners: attrs.ts; hard-link
// groups: link-groups.ts). What one event-loop turn sets is written in one transaction at its end,
// the last value per path: tar creates each file 0600 and then sets the archive's mode, and a write
// per call (~40 us each, on the thread that answers the kernel) made an untar of 20,000 files 1.9x
// slower. A kill of the daemon inside that turn (a few milliseconds) loses what it set.
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';

/** Queues `value` (null: the row goes) for `path`; `apply` runs inside the turn's transaction. */
export function batchedRows<T>(db: Database.Database, logger: Logger, what: string, apply: (path: string, value: T | null) => void): (path: string, value: T | null) => void {
  const pending = new Map<string, T | null>();
  const flush = db.transaction(() => {
    for (const [path, value] of pending) apply(path, value);
    pending.clear();
  });
  return (path, value) => {
    if (pending.size === 0) {
      setImmediate(() => {
        try {
          flush();
        } catch (error) {
          pending.clear();
          logger.warn({ err: (error as Error).message }, `mount: recording ${what} failed`);
        }
      });
    }
    pending.delete(path); // re-inserted last: a path's changes stay in the order they were made
    pending.set(path, value);
  };
}
