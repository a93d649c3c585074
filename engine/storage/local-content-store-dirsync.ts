// Directory fsync with coalescing, and a per-key mutex. Both are per store instance (no module state).
import { open } from 'node:fs/promises';

interface DirState {
  running: Promise<void> | null;
  queued: Promise<void> | null;
}

/**
 * A rename is durable only once its directory is fsynced. Many puts landing in one shard directory at
 * once would each pay a directory fsync; one fsync covers every rename that happened before it
 * *started*, so concurrent requesters share it.
 *
 * The subtle part: a requester that arrives while an fsync is already running must NOT share that
 * one — its rename may have happened after the running fsync began writing the directory's metadata,
 * so that fsync may not cover it. It waits for the NEXT fsync, which starts after the running one ends
 * and is shared by everyone who arrived in the meantime. So at most two fsyncs per directory are ever
 * pending, however many puts there are.
 */
export class DirectorySyncer {
  private readonly dirs = new Map<string, DirState>();

  sync(dir: string): Promise<void> {
    let state = this.dirs.get(dir);
    if (state === undefined) {
      state = { running: null, queued: null };
      this.dirs.set(dir, state);
    }
    const { running } = state;
    if (running === null) return this.start(dir, state);
    if (state.queued !== null) return state.queued;
    const current = state;
    const queued = running.then(
      () => this.startQueued(dir, current),
      () => this.startQueued(dir, current),
    );
    current.queued = queued;
    return queued;
  }

  private startQueued(dir: string, state: DirState): Promise<void> {
    state.queued = null;
    return this.start(dir, state);
  }

  private start(dir: string, state: DirState): Promise<void> {
    const run: Promise<void> = fsyncDirectory(dir).finally(() => {
      if (state.running === run) state.running = null;
      if (state.running === null && state.queued === null && this.dirs.get(dir) === state) this.dirs.delete(dir);
    });
    state.running = run;
    return run;
  }
}

export async function fsyncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Serializes async sections per key (here: per object hash), so a put that verifies-then-renames and a
 * delete of the same object cannot interleave inside this process. Other processes are covered by the
 * atomicity of rename(2) and by the touch-before-check order in the loose store.
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, section: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const tail = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.tails.set(key, tail);
    await previous;
    try {
      return await section();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
