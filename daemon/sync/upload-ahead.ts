// While a page's datasets go up (seconds for a big file), the small contents of the pages after it go
// up too. Their version records still wait for this page's (the push keeps the outbox's order, one
// cursor), but by then their bytes are on the server, and those pages' pushes find nothing missing.
//
// Why (issue 38): a first sync of 5,000 small files and a 500 MiB file captured the big file after
// 2,260 small ones; the ~2,700 captured after it waited behind its upload, then went up one page at a
// time once it was done (3.4 s after the capture had finished, at load ~14). Contents may go before
// their records: the server keeps an upload as the project's (durably, verified) whatever refers to it.
import type { ContentStore, Engine } from '../../engine/engine-api.js';
import type { ContentHash } from '../../engine/types.js';
import type { Remote } from './remote.js';
import { uploadMissing } from './transfer.js';

/** Pages looked at per wait, and at most this many pages ahead (a backlog larger is pushed as usual). */
const PAGE = 500;
const MAX_PAGES = 40;
/** How often the outbox is looked at again while it has nothing more and the datasets still go up. */
const RECHECK_MS = 200;

export interface UploadAheadDeps {
  engine: Pick<Engine, 'syncOutbox'>;
  store: ContentStore;
  projectId: string;
}

/**
 * Uploads the small contents of the outbox after `afterSeq`, a page at a time, until `busy` settles
 * (the page in hand is finished first) or MAX_PAGES were sent. Datasets ahead are left to their own
 * page. Resolves to the bytes sent once `busy` has settled; never rejects (see the catch).
 */
export async function uploadAheadWhile(deps: UploadAheadDeps, remote: Remote, afterSeq: number, busy: Promise<unknown>, signal: AbortSignal): Promise<number> {
  let settled = false;
  let wake: (() => void) | null = null;
  const until = busy.then(
    () => undefined,
    () => undefined,
  );
  void until.then(() => {
    settled = true;
    wake?.();
  });
  let cursor = afterSeq;
  let sent = 0;
  try {
    for (let pages = 0; !settled && !signal.aborted && pages < MAX_PAGES; ) {
      const page = await deps.engine.syncOutbox({ projectId: deps.projectId, afterSeq: cursor, limit: PAGE });
      // Done meanwhile: the rest goes with its own pages, as usual.
      if (settled) break;
      if (page.lastSeq === null) {
        // Nothing more yet (the capture may still be running): look again shortly, or stop with the datasets.
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, RECHECK_MS);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = null;
        continue;
      }
      const sizes = new Map<ContentHash, number>();
      for (const { record, pulled } of page.items) {
        if (!pulled && !record.dataset && record.contentHash !== null) sizes.set(record.contentHash, record.size);
      }
      sent += await uploadMissing(remote, deps.store, sizes, signal);
      cursor = page.lastSeq;
      pages++;
    }
  } catch {
    // Only a head start: a failure here (a content gone from the store, the server away) must not fail
    // the page in hand, whose own contents are up. The page holding that content meets it again when
    // its turn comes, and fails, reports and retries there as any page does.
  } finally {
    await until;
  }
  return sent;
}
