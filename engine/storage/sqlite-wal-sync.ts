// Durable commits without blocking the event loop.
//
// better-sqlite3 is synchronous: with synchronous=FULL every commit fsyncs the WAL on the main thread,
// and the whole process (every HTTP request, every FUSE answer) waits for the disk. Profiled under 64
// concurrent small writes over HTTP, that wait was the largest single cost: 18% of the server's main
// thread, in ~2-5 ms stalls, one per group commit.
//
// So the connection runs with synchronous=NORMAL (commits append to the WAL without fsync) and every
// method that changed the database is acknowledged only after an fdatasync of the WAL file, issued on
// libuv's thread pool. The promise a caller awaits resolves after that fdatasync, so "acknowledged"
// still means "on disk", as with FULL:
//  - The WAL is append-only between checkpoints and each commit frame is checksummed: after a crash,
//    SQLite recovers every transaction whose frames reached the disk and drops a torn tail. An
//    fdatasync that starts after a commit returned covers that commit's frames.
//  - Checkpoints (automatic, every ~1000 pages) sync the WAL and the database file themselves in
//    NORMAL mode before the WAL is reused, so a restarted WAL never exposes an unsynced database.
//  - Other readers may see a commit before its fdatasync completes (as with any group commit): a
//    later write that depends on it (a snapshot pinning it) waits for a later fdatasync, which covers
//    the earlier frames too, because the WAL is one sequential file.
// Concurrent commits share fdatasync calls: at most one runs, and everything committed while it ran
// waits for the next one (group commit at the WAL level).
import { close, fdatasync, open } from 'node:fs';
import { promisify } from 'node:util';
import { StrataError, storageFailure } from '../errors.js';
import type { MetadataRepository } from '../ports/metadata-repository.js';

const openAsync = promisify(open);
const fdatasyncAsync = promisify(fdatasync);
const closeAsync = promisify(close);

export class WalSync {
  private fd: number | null = null;
  private running: Promise<void> | null = null;
  private queued: Promise<void> | null = null;
  /** After a failed fdatasync the kernel may have dropped the dirty pages: nothing is acknowledged again. */
  private broken: unknown = null;
  private closed = false;
  /** fdatasync calls completed (observability, and how tests see that commits share them) */
  syncs = 0;

  constructor(private readonly walPath: string) {}

  /** Resolves once everything committed before the call is on disk. */
  sync(): Promise<void> {
    if (this.broken !== null) return Promise.reject(this.failure(this.broken));
    if (this.running === null) return this.start();
    // The running fdatasync may have started before the caller's commit: wait for the next one,
    // which every commit made meanwhile shares.
    this.queued ??= this.running.then(
      () => this.startQueued(),
      () => this.startQueued(),
    );
    return this.queued;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.queued?.catch(() => {});
    await this.running?.catch(() => {});
    if (this.fd !== null) {
      const fd = this.fd;
      this.fd = null;
      await closeAsync(fd).catch(() => {});
    }
  }

  private startQueued(): Promise<void> {
    this.queued = null;
    if (this.broken !== null) return Promise.reject(this.failure(this.broken));
    return this.start();
  }

  private start(): Promise<void> {
    const run = this.flush().finally(() => {
      if (this.running === run) this.running = null;
    });
    this.running = run;
    return run;
  }

  private async flush(): Promise<void> {
    if (this.closed) throw new StrataError('SHUTTING_DOWN');
    try {
      // The WAL exists from the first write on (the caller only syncs after a change) and keeps its
      // inode for the connection's life: SQLite rewinds it after a checkpoint, it never unlinks it.
      this.fd ??= await openAsync(this.walPath, 'r');
      await fdatasyncAsync(this.fd);
      this.syncs += 1;
    } catch (error) {
      this.broken = error;
      throw this.failure(error);
    }
  }

  private failure(cause: unknown): StrataError {
    return storageFailure('Syncing the metadata database to disk failed; restart to recover', { details: { code: (cause as NodeJS.ErrnoException | null)?.code }, cause });
  }
}

/**
 * Wraps every method of the repository's groups: a call that changed the database (SQLite's change
 * counter moved while it ran; every method runs its transaction synchronously inside the call) resolves
 * only after the WAL is synced. Read-only calls pass straight through.
 */
export function acknowledgeDurably(
  repository: MetadataRepository,
  changeCount: () => number,
  wal: WalSync,
  checkpoints?: { changed(): void; barrier(): Promise<void> | null },
): MetadataRepository {
  const sync = { changeCount, wal, afterChange: () => checkpoints?.changed(), barrier: () => checkpoints?.barrier() ?? null };
  return {
    projects: wrapGroup(repository.projects, sync),
    versions: wrapGroup(repository.versions, sync),
    snapshots: wrapGroup(repository.snapshots, sync),
    access: wrapGroup(repository.access, sync),
    close: async () => {
      await wal.close();
      await repository.close();
    },
  };
}

interface SyncHooks {
  changeCount: () => number;
  wal: WalSync;
  afterChange: () => void;
  /** a rewinding checkpoint is running: calls wait for it (sqlite-checkpointer.ts) */
  barrier: () => Promise<void> | null;
}

function wrapGroup<T extends object>(group: T, { changeCount, wal, afterChange, barrier }: SyncHooks): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, member] of Object.entries(group)) {
    if (typeof member !== 'function') {
      wrapped[name] = member;
      continue;
    }
    const method = member as (...args: unknown[]) => unknown;
    const call = (args: unknown[]): unknown => {
      const before = changeCount();
      const result = method.apply(group, args);
      if (changeCount() === before || !(result instanceof Promise)) return result;
      afterChange();
      return result.then(
        async (value) => {
          await wal.sync();
          return value;
        },
        async (error: unknown) => {
          // A failed call may still have committed part of its work (a non-atomic batch commits the
          // records that passed): those must be durable before the caller hears anything.
          await wal.sync();
          throw error;
        },
      );
    };
    // Iterables (allReferencedHashes) page through their own calls: only promise methods wait.
    const iterates = name === 'allReferencedHashes' || name === 'projectReferencedHashes';
    wrapped[name] = (...args: unknown[]) => {
      const held = iterates ? null : barrier();
      return held === null ? call(args) : held.then(() => call(args));
    };
  }
  return wrapped as T;
}
