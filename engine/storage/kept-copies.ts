// Copies of pulled datasets, kept for a moment for the file they are about to become (issue 38).
//
// Watch mode brings a pulled dataset to disk right after the pull stored it: writeObjectsTo read the
// shards back from the pack, hashed them again and wrote the working-tree file, a second pass over
// 500 MiB after the first. With `keepCopy`, the chunking thread writes every byte to a file of its own
// as it stores and hashes it (chunk-file-worker-source.ts, stage.copyPath), from the same buffer; once
// every shard matched its hash the copy is kept here, and writeObjectsTo for the same shards links it
// to its target instead. The bytes are checked once (as they arrived), as before the working file was
// only ever checked once too (as it was assembled).
//
// Durability: the copy's fsync starts as soon as it is kept (the pack's runs alongside) and is awaited
// before the copy is handed out: writeObjectsTo still resolves only once the target's bytes are down.
// A copy nobody takes is removed after KEEP_MS; a crash leaves it under the store's tmp/ with the dead
// process's pid in its name, which the next start removes.
import { chmod, link, open, rm, stat } from 'node:fs/promises';
import type { ContentHash } from '../types.js';

/** How long a copy waits for its writeObjectsTo (a clone brings a file to disk within seconds). */
const KEEP_MS = 10 * 60_000;
/** At most this many copies at once: a pull of many big versions keeps the latest, the others are assembled as before. */
const MAX_COPIES = 4;

type Shards = ReadonlyArray<{ hash: ContentHash; size: number }>;

interface Kept {
  path: string;
  synced: Promise<boolean>;
  timer: NodeJS.Timeout;
}

export class KeptCopies {
  readonly #copies = new Map<string, Kept>();

  /** `path` holds exactly the bytes of `shards`, in order (checked): kept, and its fsync started. */
  keep(shards: Shards, path: string): void {
    const key = keyOf(shards);
    this.#drop(key);
    if (this.#copies.size >= MAX_COPIES) this.#drop(this.#copies.keys().next().value!);
    const timer = setTimeout(() => this.#drop(key), KEEP_MS);
    timer.unref();
    this.#copies.set(key, { path, synced: fsyncFile(path), timer });
  }

  /**
   * Creates `target` (which must not exist) from the copy of `shards`, durable, with `mode` as open()
   * would give it. False when there is none, or it could not be linked there (another filesystem): the
   * caller assembles the file as before.
   */
  async placeAt(shards: Shards, target: string, mode: number): Promise<boolean> {
    const key = keyOf(shards);
    const kept = this.#copies.get(key);
    if (kept === undefined) return false;
    this.#copies.delete(key);
    clearTimeout(kept.timer);
    try {
      if (!(await kept.synced)) return false;
      try {
        await link(kept.path, target);
      } catch (error) {
        // EEXIST is the caller's to hear, as from an O_EXCL open; anything else (EXDEV): assembled instead.
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw error;
        return false;
      }
      await matchMode(target, mode);
      return true;
    } finally {
      // The store's name for it goes either way: the file is the user's now (or nobody's).
      await rm(kept.path, { force: true });
    }
  }

  /** Removes every copy (the store closes). */
  async close(): Promise<void> {
    const paths = [...this.#copies.values()].map((kept) => {
      clearTimeout(kept.timer);
      return kept.path;
    });
    this.#copies.clear();
    await Promise.all(paths.map((path) => rm(path, { force: true })));
  }

  #drop(key: string): void {
    const kept = this.#copies.get(key);
    if (kept === undefined) return;
    this.#copies.delete(key);
    clearTimeout(kept.timer);
    void kept.synced.finally(() => rm(kept.path, { force: true }).catch(() => undefined));
  }
}

function keyOf(shards: Shards): string {
  return shards.map((shard) => `${shard.hash}:${shard.size}`).join(',');
}

async function fsyncFile(path: string): Promise<boolean> {
  try {
    const handle = await open(path, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    return true;
  } catch {
    return false;
  }
}

/**
 * The copy was created 0o666 less the umask, as the target would have been with 0o666: only bits
 * `mode` lacks are taken away, and an executable gets x where it has r (placeFile's rule).
 */
async function matchMode(target: string, mode: number): Promise<void> {
  const made = (await stat(target)).mode & 0o777;
  let wanted = made & mode;
  if ((mode & 0o111) !== 0) wanted |= ((wanted & 0o444) >> 2) & mode;
  if (wanted !== made) await chmod(target, wanted);
}
