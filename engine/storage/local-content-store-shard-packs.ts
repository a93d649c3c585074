// Dataset shards live in pack files: objects/packs/<pid>-<uuid>.pack holds the new shards of one
// dataset ingest back to back, and a pack_entries row (in objects/packed.sqlite) says where each shard
// is: pack, offset, size.
//
// Why not one loose file per shard: a 1 GiB dataset is ~1,000 shards, and a file each cost a create,
// a rename, an fsync and a directory fsync apiece. Measured on this ext4 disk, 4 × 256 MiB in process:
// writing the shards as 1,024 fsynced files took 1.4–1.6 s, as one file per dataset 0.70 s, while
// read + cut search + both hashes alone took 0.40 s; cp+fsync of the same bytes took 0.52 s. Creating
// many files right after many were deleted is slower still (ext4 skips recently freed inodes).
//
// Crash safety: a pack is written and fsynced under tmp/ (a dead writer's temp is removed at the next
// start), renamed into packs/, the directory fsynced, and only then indexed; the manifest that names
// the shards is stored after that. A crash between rename and index leaves a pack no row names: the
// next start removes it when the process that wrote it is gone (its pid is in the name).
//
// Space: deleting a shard drops its row; a pack with no rows left is unlinked at once. A pack that is
// mostly dead bytes is rewritten by compact() (called after garbage collection): its live shards are
// copied into a new pack, the rows repointed in one transaction, the old pack unlinked. A reader that
// located a shard just before the move finds the old file gone and looks the shard up again.
import { randomUUID } from 'node:crypto';
import { chmod, type FileHandle, mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { ObjectInfo } from '../ports/content-store.js';
import type { ContentHash } from '../types.js';
import type { HashWorkerPool } from './hash-worker-pool.js';
import { DirectorySyncer, fsyncDirectory } from './local-content-store-dirsync.js';
import { isNotFound, isProcessAlive, storageError } from './local-content-store-loose.js';
import type { PackEntry, PackObjects } from './local-content-store-pack.js';
import { streamLooseObject } from './local-content-store-read.js';

const PACK_NAME = /^(\d+)-[0-9a-f-]+\.pack$/;
const COPY_BYTES = 1 << 20;
/** A pack is rewritten once its dead bytes outweigh its live ones and amount to at least this much. */
const COMPACT_MIN_DEAD_BYTES = 4 << 20;

export interface PackLocation {
  pack: string;
  path: string;
  offset: number;
  size: number;
  touchedAtMs: number;
}

interface EntryRow {
  hash: ContentHash;
  pack: string;
  offset: number;
  size: number;
  touched_at: number;
}

export class ShardPacks {
  readonly dir: string;
  private readonly syncer = new DirectorySyncer();
  private readonly locateStmt;
  private readonly locateManyStmt;
  private readonly pageStmt;
  private readonly countStmt;
  private readonly liveStmt;
  private readonly entriesStmt;
  private compacting: Promise<number> | null = null;

  private constructor(
    objectsDir: string,
    private readonly tmpDir: string,
    private readonly index: PackObjects,
    private readonly pool: HashWorkerPool,
  ) {
    this.dir = join(objectsDir, 'packs');
    this.locateStmt = index.prepare<[string], EntryRow>('SELECT hash, pack, offset, size, touched_at FROM pack_entries WHERE hash = ?');
    this.locateManyStmt = index.prepare<[string], EntryRow>(
      'SELECT hash, pack, offset, size, touched_at FROM pack_entries WHERE hash IN (SELECT value FROM json_each(?))',
    );
    this.pageStmt = index.prepare<[string, number], EntryRow>('SELECT hash, pack, offset, size, touched_at FROM pack_entries WHERE hash > ? ORDER BY hash LIMIT ?');
    this.countStmt = index.prepare<[string], { n: number }>('SELECT count(*) AS n FROM pack_entries WHERE pack = ?');
    this.liveStmt = index.prepare<[], { pack: string; live: number }>('SELECT pack, sum(size) AS live FROM pack_entries GROUP BY pack');
    this.entriesStmt = index.prepare<[string], EntryRow>('SELECT hash, pack, offset, size, touched_at FROM pack_entries WHERE pack = ? ORDER BY offset');
  }

  static async open(objectsDir: string, tmpDir: string, index: PackObjects, pool: HashWorkerPool): Promise<ShardPacks> {
    const packs = new ShardPacks(objectsDir, tmpDir, index, pool);
    const created = await mkdir(packs.dir, { recursive: true });
    if (created !== undefined) await fsyncDirectory(objectsDir);
    await packs.removeOrphans();
    return packs;
  }

  pathOf(pack: string): string {
    return join(this.dir, pack);
  }

  locate(hash: ContentHash): PackLocation | null {
    const row = this.locateStmt.get(hash);
    return row === undefined ? null : this.toLocation(row);
  }

  /** locate() for many shards in one statement; the ones not indexed are missing from the map. */
  locateMany(hashes: readonly ContentHash[]): Map<ContentHash, PackLocation> {
    const found = new Map<ContentHash, PackLocation>();
    for (const row of this.locateManyStmt.all(JSON.stringify(hashes))) found.set(row.hash as ContentHash, this.toLocation(row));
    return found;
  }

  /** Keyset pages of indexed shards, like PackObjects.page. */
  page(after: string, limit: number): ObjectInfo[] {
    return this.pageStmt.all(after, limit).map((row) => ({ hash: row.hash, size: row.size, touchedAtMs: row.touched_at }));
  }

  /**
   * Takes in a finished pack file (tmp/, written by the chunking worker) holding `entries`: fsynced,
   * renamed into packs/, the directory fsynced, then indexed. Resolves with `created` per entry; an entry some
   * other pack indexed first is dead space here, and a pack left with no rows is removed at once.
   */
  async commit(tmpPath: string, entries: PackEntry[]): Promise<boolean[]> {
    if (entries.length === 0) {
      await rm(tmpPath, { force: true });
      return [];
    }
    const pack = `${process.pid}-${randomUUID()}.pack`;
    try {
      const handle = await open(tmpPath, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      await chmod(tmpPath, 0o444);
      await rename(tmpPath, this.pathOf(pack));
    } catch (error) {
      await rm(tmpPath, { force: true });
      throw storageError(error, 'Storing a shard pack');
    }
    try {
      await this.syncer.sync(this.dir);
      const created = await this.index.addEntries(pack, entries);
      if (!created.includes(true)) await this.unlinkIfEmpty(pack);
      return created;
    } catch (error) {
      // Not indexed (or not durable): nothing may point into it.
      await this.unlinkIfEmpty(pack).catch(() => undefined);
      throw storageError(error, 'Indexing a shard pack');
    }
  }

  /** A shard's bytes as a stream: verified when whole, like a loose object. */
  async open(hash: ContentHash, range?: { start: number; end: number }): Promise<Readable | null> {
    return this.withLocation(hash, async (at) => {
      const handle = await open(at.path, 'r');
      const bounds = range === undefined ? { start: at.offset, end: at.offset + at.size - 1 } : { start: at.offset + range.start, end: at.offset + range.end };
      return streamLooseObject(handle, hash, bounds, range === undefined);
    });
  }

  /** The whole shard in memory (unverified: the caller hashes it). */
  async read(hash: ContentHash): Promise<Buffer | null> {
    return this.withLocation(hash, async (at) => {
      const handle = await open(at.path, 'r');
      try {
        return await readSpan(handle, at.offset, at.size);
      } finally {
        await handle.close();
      }
    });
  }

  /** Re-hash a shard off the event loop. */
  async verify(hash: ContentHash): Promise<'ok' | 'corrupt' | 'missing'> {
    const state = await this.withLocation(hash, async (at) => {
      const result = await this.pool.hashFile(at.path, null, null, undefined, { offset: at.offset, length: at.size });
      if (result.kind !== 'hashed') return 'corrupt' as const;
      return result.hash === hash && result.size === at.size ? ('ok' as const) : ('corrupt' as const);
    });
    return state ?? 'missing';
  }

  /** Drops the shard's row; its pack goes once nothing in it is indexed. */
  async remove(hash: ContentHash): Promise<void> {
    const pack = await this.index.removeEntry(hash);
    if (pack !== null) await this.unlinkIfEmpty(pack);
  }

  /**
   * Rewrites packs whose dead bytes outweigh the live ones (at least COMPACT_MIN_DEAD_BYTES of them).
   * Resolves with the bytes freed. Safe beside writers and readers: entries are only ever added for
   * new packs, moves are conditional on the entry still being in the old pack, and readers re-locate.
   */
  async compact(): Promise<number> {
    this.compacting ??= this.compactAll().finally(() => {
      this.compacting = null;
    });
    return this.compacting;
  }

  private async compactAll(): Promise<number> {
    let freed = 0;
    for (const { pack, live } of this.liveStmt.all()) {
      let size: number;
      try {
        size = (await stat(this.pathOf(pack))).size;
      } catch (error) {
        if (isNotFound(error)) continue;
        throw storageError(error, 'Reading a shard pack');
      }
      const dead = size - live;
      if (dead <= live || dead < COMPACT_MIN_DEAD_BYTES) continue;
      if (await this.rewrite(pack)) freed += dead;
    }
    return freed;
  }

  private async rewrite(pack: string): Promise<boolean> {
    const entries = this.entriesStmt.all(pack);
    const tmpPath = join(this.tmpDir, `${process.pid}-${randomUUID()}.tmp`);
    const moved: Array<{ hash: ContentHash; offset: number }> = [];
    let source: FileHandle;
    try {
      source = await open(this.pathOf(pack), 'r');
    } catch (error) {
      if (isNotFound(error)) return false; // emptied and removed meanwhile
      throw storageError(error, 'Compacting a shard pack');
    }
    const target = await open(tmpPath, 'wx', 0o444);
    try {
      let offset = 0;
      for (const entry of entries) {
        for (let done = 0; done < entry.size; ) {
          const piece = await readSpan(source, entry.offset + done, Math.min(COPY_BYTES, entry.size - done));
          if (piece.length === 0) throw new Error(`the pack ${pack} is shorter than its index says`);
          await writeAll(target, piece, offset + done);
          done += piece.length;
        }
        moved.push({ hash: entry.hash, offset });
        offset += entry.size;
      }
      await target.sync();
    } catch (error) {
      await target.close();
      await rm(tmpPath, { force: true });
      throw storageError(error, 'Compacting a shard pack');
    } finally {
      await source.close();
    }
    await target.close();
    const fresh = `${process.pid}-${randomUUID()}.pack`;
    await rename(tmpPath, this.pathOf(fresh));
    await this.syncer.sync(this.dir);
    await this.index.moveEntries(pack, fresh, moved);
    await this.unlinkIfEmpty(pack);
    await this.unlinkIfEmpty(fresh);
    return true;
  }

  /**
   * Runs `use` on the shard's location; when its pack vanished under us (compacted, or emptied), looks
   * the shard up once more. Null when the shard is not in any pack, or its pack file is gone for good
   * (removed behind the store's back: the shard is missing, which is what readers and fsck report).
   */
  private async withLocation<T>(hash: ContentHash, use: (at: PackLocation) => Promise<T>): Promise<T | null> {
    for (let attempt = 0; ; attempt++) {
      const at = this.locate(hash);
      if (at === null) return null;
      try {
        return await use(at);
      } catch (error) {
        if (!isNotFound(error)) throw storageError(error, 'Reading a shard pack');
        if (attempt > 0) return null;
      }
    }
  }

  private async unlinkIfEmpty(pack: string): Promise<void> {
    if (this.countStmt.get(pack)!.n > 0) return;
    // No directory fsync: a crash that undoes this unlink leaves an unindexed pack, removed at the next
    // start like any orphan.
    await rm(this.pathOf(pack), { force: true });
  }

  /** Packs no row names, written by a process that is gone: a crash between rename and index. */
  private async removeOrphans(): Promise<void> {
    for (const name of await readdir(this.dir)) {
      const match = PACK_NAME.exec(name);
      if (match === null || isProcessAlive(Number(match[1]))) continue;
      if (this.countStmt.get(name)!.n === 0) await rm(this.pathOf(name), { force: true });
    }
  }

  private toLocation(row: EntryRow): PackLocation {
    return { pack: row.pack, path: this.pathOf(row.pack), offset: row.offset, size: row.size, touchedAtMs: row.touched_at };
  }
}

/** Up to `size` bytes at `offset`: fewer only where the file ends (a damaged pack; hashes catch it). */
async function readSpan(handle: FileHandle, offset: number, size: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(size);
  let done = 0;
  while (done < size) {
    const { bytesRead } = await handle.read(buffer, done, size - done, offset + done);
    if (bytesRead === 0) return buffer.subarray(0, done);
    done += bytesRead;
  }
  return buffer;
}

async function writeAll(handle: FileHandle, data: Buffer, position: number): Promise<void> {
  for (let done = 0; done < data.length; ) {
    done += (await handle.write(data, done, data.length - done, position + done)).bytesWritten;
  }
}
