// Renames found at about the same time go to the engine together (engine renameFiles: one atomic
// commit). Watch mode's `mv big big2` of a 2,000-file directory is found file by file; one commit each
// (an fsync each) took A ~26 s to record, and B only saw the new names after that. The capture
// pipeline already keeps each path's operations in order and bounds how many run at once, so what
// queues up within one turn of the event loop is a group of unrelated paths. A group that fails
// (a file changed meanwhile: all or nothing) is renamed again one by one, each with its own outcome.
import type { Engine, WriteResult } from '../../engine/engine-api.js';
import type { Actor, VersionRecord } from '../../engine/types.js';

type Renamed = { deleted: VersionRecord; created: WriteResult };

interface Queued {
  from: string;
  to: string;
  resolve(result: Renamed): void;
  reject(error: unknown): void;
}

const MAX_GROUP = 1_000;

export class RenameBatch {
  readonly #engine: Engine;
  readonly #projectId: string;
  readonly #actor: Actor;
  #queue: Queued[] = [];
  #scheduled = false;

  constructor(engine: Engine, projectId: string, actor: Actor) {
    this.#engine = engine;
    this.#projectId = projectId;
    this.#actor = actor;
  }

  /** Renames `from` to `to` (overwriting), with whatever else is asked in the same turn. */
  rename(from: string, to: string): Promise<Renamed> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ from, to, resolve, reject });
      if (this.#scheduled) return;
      this.#scheduled = true;
      setImmediate(() => {
        this.#scheduled = false;
        void this.#flush();
      });
    });
  }

  async #flush(): Promise<void> {
    while (this.#queue.length > 0) {
      const group = this.#queue.splice(0, MAX_GROUP);
      if (group.length > 1) {
        try {
          const results = await this.#engine.renameFiles({ projectId: this.#projectId, actor: this.#actor, pairs: group.map(({ from, to }) => ({ from, to })) });
          for (const [i, queued] of group.entries()) queued.resolve(results[i]!);
          continue;
        } catch {
          // One by one below: each rename gets its own outcome (the one that failed, its own error).
        }
      }
      for (const queued of group) {
        this.#engine.renameFile({ projectId: this.#projectId, from: queued.from, to: queued.to, actor: this.#actor, overwrite: true }).then(queued.resolve, queued.reject);
      }
    }
  }
}
