// st_blocks of sparse files (issue 39 item 5): `dd seek=1G count=1` showed 1,048,577K in `du`
// against 4K on the disk underneath, because a versioned file's blocks were computed from its size.
// A file being written reports its staging file's blocks (holes stay holes there); at its capture,
// a file with fewer blocks than its size needs has them noted per content (a hash), so the version
// — and any later restore of it — shows them too, across restarts (`mount_sparse` in the daemon's
// state DB). Only sparse contents have rows; any other shows ceil(size / 512).
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';
import { batchedRows } from './batched-rows.js';

export interface SparseRows {
  list(): Array<{ hash: string; blocks: number }>;
  put(hash: string, blocks: number): void;
}

export class SparseBlocks {
  readonly #blocks = new Map<string, number>();

  constructor(private readonly rows: SparseRows | null) {
    for (const { hash, blocks } of rows?.list() ?? []) this.#blocks.set(hash, blocks);
  }

  /** st_blocks (512-byte units) of content `hash` (null: not stored yet) of `size` bytes. */
  of(hash: string | null | undefined, size: number): number {
    return (hash === null || hash === undefined ? undefined : this.#blocks.get(hash)) ?? Math.ceil(size / 512);
  }

  /** The content `hash` of `size` bytes took `blocks` where it was written: kept when it has holes. */
  note(hash: string, size: number, blocks: number): void {
    if (blocks >= Math.ceil(size / 512) || this.#blocks.get(hash) === blocks) return;
    this.#blocks.set(hash, blocks);
    this.rows?.put(hash, blocks);
  }
}

export function sparseRowsIn(db: Database.Database, projectId: string, logger: Logger): SparseRows {
  db.exec(`CREATE TABLE IF NOT EXISTS mount_sparse (
    project_id TEXT NOT NULL, content_hash TEXT NOT NULL, blocks INTEGER NOT NULL,
    PRIMARY KEY (project_id, content_hash)) WITHOUT ROWID`);
  const put = db.prepare('INSERT OR REPLACE INTO mount_sparse (project_id, content_hash, blocks) VALUES (?, ?, ?)');
  const queue = batchedRows<number>(db, logger, 'the blocks of sparse files', (hash, blocks) => {
    if (blocks !== null) put.run(projectId, hash, blocks);
  });
  return {
    list: () => db.prepare<[string], { hash: string; blocks: number }>('SELECT content_hash AS hash, blocks FROM mount_sparse WHERE project_id = ?').all(projectId),
    put: (hash, blocks) => queue(hash, blocks),
  };
}
