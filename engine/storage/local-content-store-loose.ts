// Large objects as loose files: `objects/ab/cdef…` (the first two hex digits of the hash name a shard
// directory, so no directory grows past 1/256 of the store), staged in `tmp/` on the same filesystem.
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rename, rm, stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { StrataError, storageFailure } from '../errors.js';
import type { ObjectInfo } from '../ports/content-store.js';
import type { Clock } from '../ports/world.js';
import type { ContentHash } from '../types.js';
import { DirectorySyncer, fsyncDirectory, KeyedMutex } from './local-content-store-dirsync.js';

const OBJECT_NAME = /^[0-9a-f]{62}$/;
const TEMP_NAME = /^(\d+)-[0-9a-f-]+\.tmp$/;
const SHARDS = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

export type ObjectCheck = 'ok' | 'corrupt' | 'missing';

export class LooseObjects {
  readonly objectsDir: string;
  readonly tmpDir: string;
  private readonly syncer = new DirectorySyncer();
  readonly locks = new KeyedMutex();

  private constructor(
    root: string,
    private readonly clock: Clock,
  ) {
    this.objectsDir = join(root, 'objects');
    this.tmpDir = join(root, 'tmp');
  }

  /**
   * Creates the layout and removes temp files left by a crashed process. All 256 shard directories are
   * made up front, so a put never creates a directory (which would need an fsync of `objects/` too).
   */
  static async open(root: string, clock: Clock): Promise<LooseObjects> {
    const loose = new LooseObjects(root, clock);
    await mkdir(loose.tmpDir, { recursive: true });
    await mkdir(loose.objectsDir, { recursive: true });
    const present = new Set(await readdir(loose.objectsDir));
    const missing = SHARDS.filter((shard) => !present.has(shard));
    await Promise.all(missing.map((shard) => mkdir(join(loose.objectsDir, shard), { recursive: true })));
    if (missing.length > 0) {
      await fsyncDirectory(loose.objectsDir);
      await fsyncDirectory(root);
    }
    await loose.removeLeftoverTemps();
    return loose;
  }

  pathOf(hash: ContentHash): string {
    const hex = hash.slice('blake3:'.length);
    return join(this.objectsDir, hex.slice(0, 2), hex.slice(2));
  }

  /** `<pid>-<uuid>.tmp`: the pid lets a later start tell a dead writer's leftovers from a live one's. */
  newTempPath(): string {
    return join(this.tmpDir, `${process.pid}-${randomUUID()}.tmp`);
  }

  /**
   * Move a complete, fsynced temp file holding `size` bytes that hash to `hash` into place.
   * Returns true if this call created the object, false if an intact copy was already there.
   *
   * Order matters:
   * 1. Touch the existing object first. A garbage collector (in this or another process) that reads
   *    touchedAtMs after this point spares it; one that already decided to delete it races us, and
   *    then the stat below sees it missing and we rename our copy in.
   * 2. Never overwrite a good object (a reader may have it open, and rewriting costs a write), but do
   *    replace a damaged one: size mismatch proves damage; a size match is rehashed. The rehash costs
   *    less than the write + fsync we just paid for the temp file, and it is what lets re-putting a
   *    file heal an object that rotted on disk instead of silently keeping the bad copy.
   * 3. rename(2) is atomic: a crash leaves either the old name state or the new one, never a partial
   *    object under the final name (the bytes were fsynced before). Two processes renaming the same
   *    hash both install identical bytes.
   * 4. The rename is durable only after the shard directory is fsynced; only then do we resolve.
   */
  async commit(
    tmpPath: string,
    hash: ContentHash,
    size: number,
    rehash: (path: string) => Promise<ContentHash>,
  ): Promise<boolean> {
    const finalPath = this.pathOf(hash);
    return this.locks.run(hash, async () => {
      const seconds = this.clock.now() / 1000;
      const existing = await this.checkExisting(finalPath, size, hash, seconds, rehash);
      if (existing === 'ok') {
        await rm(tmpPath, { force: true });
        return false;
      }
      // The mtime is the object's touchedAtMs; set it from the injected clock so a frozen clock in
      // tests and the GC's notion of "now" agree.
      await utimes(tmpPath, seconds, seconds);
      await rename(tmpPath, finalPath);
      await this.syncer.sync(join(finalPath, '..'));
      return true;
    });
  }

  private async checkExisting(
    finalPath: string,
    size: number,
    hash: ContentHash,
    seconds: number,
    rehash: (path: string) => Promise<ContentHash>,
  ): Promise<ObjectCheck> {
    try {
      await utimes(finalPath, seconds, seconds);
      const info = await stat(finalPath);
      if (!info.isFile() || info.size !== size) return 'corrupt';
      return (await rehash(finalPath)) === hash ? 'ok' : 'corrupt';
    } catch (error) {
      if (isNotFound(error)) return 'missing';
      throw error;
    }
  }

  async stat(hash: ContentHash): Promise<ObjectInfo | null> {
    try {
      const info = await stat(this.pathOf(hash));
      // Rounded: utimes takes float seconds, so a whole millisecond can come back as x.9999.
      return { hash, size: info.size, touchedAtMs: Math.round(info.mtimeMs) };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw storageError(error, 'Reading object metadata');
    }
  }

  /**
   * No directory fsync after unlink: if a crash undoes a delete, the object comes back complete and
   * the next garbage collection removes it again. Durability matters for what we keep, not for what we drop.
   */
  async remove(hash: ContentHash): Promise<void> {
    await this.locks.run(hash, () => rm(this.pathOf(hash), { force: true }));
  }

  async *list(): AsyncGenerator<ObjectInfo> {
    for (const shard of SHARDS) {
      let names: string[];
      try {
        names = await readdir(join(this.objectsDir, shard));
      } catch (error) {
        if (isNotFound(error)) continue;
        throw storageError(error, 'Listing objects');
      }
      for (const name of names.sort()) {
        if (!OBJECT_NAME.test(name)) continue;
        const info = await this.stat(`blake3:${shard}${name}`);
        if (info !== null) yield info;
      }
    }
  }

  /**
   * A temp file whose writer process is gone can never be committed. Files of live processes (another
   * store on the same root, or this process) are kept: their writer may be about to rename them. A pid
   * reused by an unrelated process keeps its leftover until a later start; that only costs disk space.
   */
  private async removeLeftoverTemps(): Promise<void> {
    for (const name of await readdir(this.tmpDir)) {
      const match = TEMP_NAME.exec(name);
      if (match !== null && isProcessAlive(Number(match[1]))) continue;
      await rm(join(this.tmpDir, name), { force: true, recursive: true });
    }
  }
}

export function isProcessAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false; // kill(0) would signal our own group
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function isNotFound(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'ENOENT';
}

/** A filesystem failure inside the store (EIO, EACCES...) is the store's: STORAGE_ERROR; a full disk is DISK_FULL. */
export function storageError(error: unknown, action: string): StrataError {
  if (error instanceof StrataError) return error;
  const errno = error as NodeJS.ErrnoException;
  return storageFailure(`${action} failed: ${errno?.message ?? String(error)}`, { details: { code: errno?.code, syscall: errno?.syscall }, cause: error });
}
