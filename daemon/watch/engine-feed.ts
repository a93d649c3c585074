// What the engine recorded for a project since we last looked: the project's history, which the
// repository orders by commit sequence, read newest first back to a cursor — the newest version id
// already brought to disk. The cursor lives in the daemon's state DB, so a daemon that was down (or
// killed) catches up with what happened meanwhile; re-reading a record is harmless (materialize.ts
// compares states, it does not replay operations), so the cursor is saved only after the paths it
// covers were applied.
import type { HostContext } from '../host.js';

const CURSOR_FLAG = 'engineFeed';
const PAGE = 500;
/** Further back than this (a restore of 50,000 paths, a cursor pruned by retention): compare everything instead. */
const MAX_PAGES = 20;

export type FeedRead =
  /** paths changed since the cursor (by others: the capture pipeline's own versions are left out), and the newest version id */
  | { kind: 'paths'; paths: string[]; newest: string | null }
  /** no cursor yet, or it is out of reach: compare the whole tree; `newest` becomes the cursor afterwards */
  | { kind: 'everything'; newest: string | null };

export class EngineFeed {
  readonly #host: HostContext;

  constructor(host: HostContext) {
    this.#host = host;
  }

  get cursor(): string | null {
    return this.#host.state.flags.get<{ versionId: string | null }>(this.#host.projectId, CURSOR_FLAG)?.versionId ?? null;
  }

  get hasCursor(): boolean {
    return this.#host.state.flags.get(this.#host.projectId, CURSOR_FLAG) !== undefined;
  }

  save(newest: string | null): void {
    this.#host.state.flags.set(this.#host.projectId, CURSOR_FLAG, { versionId: newest });
  }

  async read(): Promise<FeedRead> {
    const { engine, projectId } = this.#host;
    if (!this.hasCursor) {
      const first = await engine.history({ projectId, limit: 1 });
      return { kind: 'everything', newest: first.items[0]?.versionId ?? null };
    }
    const cursor = this.cursor;
    const paths = new Set<string>();
    let newest: string | null = null;
    let next: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      // The first page is one record: the usual answer (nothing new) costs one indexed row.
      const result = await engine.history({ projectId, limit: page === 0 ? 1 : PAGE, ...(next ? { cursor: next } : {}) });
      for (const record of result.items) {
        if (record.versionId === cursor) return { kind: 'paths', paths: [...paths], newest: newest ?? cursor };
        newest ??= record.versionId;
        if (!this.#host.capture.takeOwnVersion(record.versionId)) paths.add(record.path);
      }
      if (result.nextCursor === undefined) {
        // The cursor is not in the history at all (pruned, or the project was reset).
        return cursor === null ? { kind: 'paths', paths: [...paths], newest } : { kind: 'everything', newest };
      }
      next = result.nextCursor;
    }
    return { kind: 'everything', newest };
  }
}
