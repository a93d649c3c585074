// Git blob ids of stored contents, remembered. Every git operation on a project (refs, pull, push)
// replays its snapshot chain to know the commit ids, and each content's git blob id (a sha1 of the
// bytes) meant reading the content back from the store: 0.37 s for GET fs/git/refs on a project of 300
// snapshots and 2,350 files. A content's blob id never changes, so it is computed once per process;
// a push remembers the ids git sent along. Bounded: the oldest ids are forgotten first (each entry
// is ~120 bytes of strings; 50,000 of them ~6 MB).
import type { ContentHash } from '../types.js';

const MAX_ENTRIES = 50_000;

export class BlobIdCache {
  readonly #ids = new Map<ContentHash, string>();

  get(hash: ContentHash): string | undefined {
    return this.#ids.get(hash);
  }

  set(hash: ContentHash, gitId: string): void {
    if (this.#ids.has(hash)) return;
    this.#ids.set(hash, gitId);
    if (this.#ids.size > MAX_ENTRIES) this.#ids.delete(this.#ids.keys().next().value!);
  }
}
