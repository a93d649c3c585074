// Datasets on S3: each content-defined shard is an ordinary object, so the shared dataset code
// (local-content-store-dataset.ts) does the chunking and we act as its shard sink.
//  - putDatasetFile: the sink's has() and putBuffer(); the helper reads each new shard back from the
//    file and stores it with its expected hash (a file that changed meanwhile fails CONTENT_CORRUPT).
//  - putDatasetStream: an upload has no file to read shards back from, and the chunking thread
//    reports the cut points only at the end, so the thread stages each shard in a scratch "pack" file
//    (the same staging the local store uses), which we then upload shard by shard and remove. The
//    staging asks a SQLite database and a directory which shards the store already holds; ours are
//    empty (S3 is asked by the puts instead, which store nothing for a shard that exists). Local disk
//    use is bounded by the upload's distinct shards, and only while it is being stored.
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, open, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { ChunkerParams } from '../datasets/chunker-params.js';
import type { DatasetIngest, PutResult } from '../ports/content-store.js';
import type { ContentHash } from '../types.js';
import { putDatasetStream } from './local-content-store-dataset.js';
import { isProcessAlive } from './local-content-store-loose.js';
import type { PackEntry } from './local-content-store-pack.js';

/** Scratch directories are named after their process, so a later one can tell a crashed one's apart. */
const SCRATCH_PREFIX = 'strata-s3-';
const SCRATCH_NAME = /^strata-s3-(\d+)-/;

/** Shards stored at once from a staged pack (each read into memory, then one PUT). */
const SHARDS_IN_FLIGHT = 4;

export type PutShard = (data: Uint8Array, expectedHash: ContentHash) => Promise<PutResult>;

export class DatasetScratch {
  private dir: Promise<string> | null = null;

  constructor(private readonly root: string | undefined) {}

  /** A private directory with the (empty) index the chunking thread's staging consults. */
  private ensure(): Promise<string> {
    this.dir ??= (async () => {
      const root = this.root ?? tmpdir();
      await mkdir(root, { recursive: true });
      const dir = await mkdtemp(join(root, `${SCRATCH_PREFIX}${process.pid}-`));
      await mkdir(join(dir, 'none'));
      const db = new Database(join(dir, 'known.sqlite'));
      try {
        db.exec('CREATE TABLE objects (hash TEXT PRIMARY KEY); CREATE TABLE pack_entries (hash TEXT PRIMARY KEY);');
      } finally {
        db.close();
      }
      return dir;
    })();
    return this.dir;
  }

  /**
   * The scratch directories of processes that are gone: a server killed while a dataset streamed in
   * left its staged pack (up to the dataset's size) there, and nothing else would ever remove it
   * (close() only removes this process's own). A live process's directory, another store on the same
   * root, is kept.
   */
  async removeLeftovers(): Promise<void> {
    const root = this.root ?? tmpdir();
    let names: string[];
    try {
      names = await readdir(root);
    } catch {
      return; // no root yet: nothing was left there
    }
    for (const name of names) {
      const match = SCRATCH_NAME.exec(name);
      if (match === null || isProcessAlive(Number(match[1]))) continue;
      await rm(join(root, name), { recursive: true, force: true }).catch(() => {});
    }
  }

  async putStream(putShard: PutShard, source: AsyncIterable<Uint8Array>, params: ChunkerParams, maxBytes: number): Promise<DatasetIngest> {
    const dir = await this.ensure();
    const packs = {
      staging: () => ({ packPath: join(dir, `${randomUUID()}.pack`), objectsDir: join(dir, 'none'), dbPath: join(dir, 'known.sqlite'), minBytes: 1 }),
      commit: (packPath: string, entries: PackEntry[]) => uploadPack(putShard, packPath, entries),
      discard: (packPath: string) => rm(packPath, { force: true }),
    };
    return putDatasetStream(packs, source, params, maxBytes);
  }

  async close(): Promise<void> {
    const dir = await this.dir?.catch(() => null);
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}

/** Store each staged shard (verified against the hash the chunking thread computed), then drop the pack. */
async function uploadPack(putShard: PutShard, packPath: string, entries: PackEntry[]): Promise<boolean[]> {
  const created: boolean[] = new Array(entries.length).fill(false);
  const handle = await open(packPath, 'r');
  try {
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < entries.length; i = next++) {
        const entry = entries[i]!;
        const data = new Uint8Array(entry.size);
        let done = 0;
        while (done < entry.size) {
          const { bytesRead } = await handle.read(data, done, entry.size - done, entry.offset + done);
          if (bytesRead === 0) throw new Error(`the staged pack ended early at ${entry.offset + done}`);
          done += bytesRead;
        }
        created[i] = (await putShard(data, entry.hash)).created;
      }
    };
    await Promise.all(Array.from({ length: SHARDS_IN_FLIGHT }, worker));
  } finally {
    await handle.close();
    await rm(packPath, { force: true });
  }
  return created;
}
