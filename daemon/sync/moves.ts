// What the incoming mass-delete guard counts (issue 38 item 2): deletions of files here, leaving out
// moves. A rename travels as a tombstone at the old path and a write of the same content at the new
// one (engine/commands/rename-file.ts); `mv m m2` of 100 files on another workstation was held here as
// "the server's changes delete 77 files", and a 2,000-file rename left 2 files at their new names
// after 200 s. Content that leaves one path and appears at another in the same change set is a move:
// nothing is lost, so it never counts — whatever the order of the two halves, and across pages.
import type { SyncChange } from '../../engine/ports/metadata-repository.js';
import type { ContentHash } from '../../engine/types.js';

/** A change set's deletions of files here, and the contents it writes (each write pairs with one deletion). */
export class ChangeSetDeletions {
  /** per deleted path here: the content it has here now */
  readonly #deleted: Array<{ path: string; hash: ContentHash; inPage: boolean }> = [];
  readonly #written = new Map<ContentHash, number>();

  /**
   * Adds items of the change set. `hashHere`: the content the path has here now (null: no file here,
   * so its deletion deletes nothing). `inPage`: the items are the page about to be applied (the rest
   * are read ahead, for judgement only).
   */
  async add(items: SyncChange[], hashHere: (path: string) => Promise<ContentHash | null>, inPage: boolean): Promise<void> {
    for (const item of items) {
      // Only what is still so on the server counts: a deletion undone, or a write deleted again, later in the feed is not.
      if (!item.current) continue;
      if (item.contentHash !== null) {
        this.#written.set(item.contentHash, (this.#written.get(item.contentHash) ?? 0) + 1);
        continue;
      }
      const hash = await hashHere(item.path);
      if (hash !== null) this.#deleted.push({ path: item.path, hash, inPage });
    }
  }

  /** Deletions whose content the change set writes nowhere else: `page` those of the page, `ahead` the rest. */
  count(): { page: number; ahead: number; moves: number } {
    const left = new Map(this.#written);
    let page = 0;
    let ahead = 0;
    let moves = 0;
    for (const deletion of this.#deleted) {
      const writes = left.get(deletion.hash) ?? 0;
      if (writes > 0) {
        left.set(deletion.hash, writes - 1);
        moves++;
      } else if (deletion.inPage) page++;
      else ahead++;
    }
    return { page, ahead, moves };
  }
}
