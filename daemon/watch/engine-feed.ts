// What the engine recorded for a project since we last looked: its version records after a cursor —
// the commit position (seq) of the newest record already brought to disk — read in commit order, as a
// mount reads them (mount/namespace.ts). The cursor lives in the daemon's state DB, so a daemon that
// was down (or killed) catches up with what happened meanwhile; re-reading a record is harmless
// (materialize.ts compares states, it does not replay operations), so the cursor is saved only after
// the paths it covers were applied.
//
// The cursor is a position, not a version id. A version id can be committed again at a later
// position: retention prunes a version this workstation pushed (its path was deleted by a pull), and
// the pull then adopts that very id as the server's conflict copy of it. With the id as the cursor,
// history read newest first stopped at the id's new place and never saw what was committed between
// its old and new one (the sync model's seed 43001: the server's file `a` and its deletions of `a/b`
// and `a/a/a` never reached the disk, the cursor equalled the newest record, and sync said in sync).
// A position is never given out twice (AUTOINCREMENT).
import type { HostContext } from '../host.js';

const CURSOR_FLAG = 'engineFeedSeq';
const PAGE = 500;
/** Further than this (a restore of 50,000 paths): compare everything instead. */
const MAX_PAGES = 20;

export type FeedRead =
  /** paths changed since the cursor (by others: the capture pipeline's own versions are left out), and the newest position */
  | { kind: 'paths'; paths: string[]; newest: number }
  /** no cursor yet, or it is out of reach: compare the whole tree; `newest` becomes the cursor afterwards */
  | { kind: 'everything'; newest: number };

export class EngineFeed {
  readonly #host: HostContext;

  constructor(host: HostContext) {
    this.#host = host;
  }

  /** The position of the newest record brought to disk (null: none saved yet; a cursor of an older daemon, a version id, counts as none). */
  get cursor(): number | null {
    return this.#host.state.flags.get<{ seq: number }>(this.#host.projectId, CURSOR_FLAG)?.seq ?? null;
  }

  save(newest: number): void {
    this.#host.state.flags.set(this.#host.projectId, CURSOR_FLAG, { seq: newest });
  }

  /** The position of the project's newest record (0: none). */
  newest(): Promise<number> {
    return this.#host.engine.feedPosition(this.#host.projectId);
  }

  async read(): Promise<FeedRead> {
    const { engine, projectId } = this.#host;
    const cursor = this.cursor;
    // Read before the comparison starts: what is committed during it is read again next time.
    if (cursor === null) return { kind: 'everything', newest: await this.newest() };
    const paths = new Set<string>();
    let after = cursor;
    for (let page = 0; page < MAX_PAGES; page++) {
      // The first page is one record: the usual answer (nothing new) costs one indexed probe.
      const limit = page === 0 ? 1 : PAGE;
      const result = await engine.syncOutbox({ projectId, afterSeq: after, limit });
      for (const { record } of result.items) {
        if (!this.#host.capture.takeOwnVersion(record.versionId)) paths.add(record.path);
      }
      if (result.lastSeq !== null) after = result.lastSeq;
      if (result.items.length < limit) return { kind: 'paths', paths: [...paths], newest: after };
    }
    return { kind: 'everything', newest: await this.newest() };
  }
}
