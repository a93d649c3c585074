// Serializes a linear chain of snapshots as a `git fast-import` stream (docs/design.md §5), produced
// incrementally: an async generator of chunks, holding one commit's change list and one content
// chunk at a time. The only state that grows with history is the content-hash → mark table (one
// entry per distinct content: 141 bytes each measured with `blake3:` keys, so 1 million distinct
// contents hold ~140 MB).
//
// Stream layout, byte for byte the same for the same chain (so the same commit ids):
//   feature done
//   blob / mark :<n> / data <size> / <bytes> LF      each content hash once, on first use
//   commit refs/heads/main / mark :<n>
//   author and committer `Name <email> <unix seconds> +0000` (both the snapshot's actor and time)
//   data <len> / <message bytes exactly> LF          the LF is fast-import's optional one, not
//                                                    part of the message: nothing is added to it
//   from :<previous commit>   (none for the first commit; `from <hex>` for an incremental export)
//   D <path>... then M 100644|100755|120000 :<mark> <path>...   (see prepareChanges for the order;
//                                                    120000 is a symbolic link, its blob the target)
//   reset refs/tags/<name> / from :<commit>          lightweight tags, in byte order
//   done
// Marks count up from 1 in order of appearance, blobs and commits alike.
//
// Tags are lightweight: a Strata tag is only a name on a snapshot, with no author or time of its
// own. An annotated tag object would need a tagger and date, which we would have to invent (and keep
// stable forever for the ids to stay put); a ref pointing at the commit carries exactly what the
// snapshot tag does.
import { StrataError } from '../errors.js';
import { ChunkBatcher, DEFAULT_CHUNK_BYTES } from './chunk-batcher.js';
import { assertTagName, commitIdents, type ExportCommit, type PreparedModify, prepareChanges } from './export-commit.js';
import { pathNeedsQuoting, quotePath } from './quote.js';

export type { ExportChange, ExportCommit, GitIdentity } from './export-commit.js';

export type ContentSource = AsyncIterable<Uint8Array> | Iterable<Uint8Array>;

export interface FastImportWriterOptions {
  /**
   * Streams one content's bytes; exactly `size` bytes (the size in the change) must come out, or the
   * export fails with CONTENT_CORRUPT. Chunks of 32 KiB or more are passed on without a copy, so the
   * source must not reuse a chunk's memory after yielding it (Node streams never do).
   */
  openContent: (contentHash: string) => ContentSource | Promise<ContentSource>;
  /** An existing git commit (40 or 64 hex digits) the first commit continues from: an incremental export. */
  parentCommitId?: string;
  /** Branch the commits go to; default refs/heads/main. */
  ref?: string;
  /** Size of the chunks produced (the last one may be smaller); default 64 KiB. */
  chunkBytes?: number;
}

const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const NEWLINE = '\n';

export async function* writeFastImport(
  commits: AsyncIterable<ExportCommit> | Iterable<ExportCommit>,
  options: FastImportWriterOptions,
): AsyncGenerator<Uint8Array, void, undefined> {
  const ref = options.ref ?? 'refs/heads/main';
  if (!ref.startsWith('refs/')) throw new TypeError(`ref must start with refs/, got ${ref}`);
  assertTagName(ref); // the same ref-name rules
  if (typeof options.openContent !== 'function') throw new TypeError('openContent must be a function');
  if (options.parentCommitId !== undefined && !OBJECT_ID.test(options.parentCommitId)) {
    throw new TypeError('parentCommitId must be 40 or 64 lowercase hex digits');
  }
  const out = new ChunkBatcher(options.chunkBytes ?? DEFAULT_CHUNK_BYTES);
  const marks = new Map<string, number>();
  let nextMark = 1;
  let parent = options.parentCommitId === undefined ? null : options.parentCommitId;

  out.text('feature done\n');
  for await (const commit of commits) {
    const changes = prepareChanges(commit.changes);
    for (const tag of commit.tags) assertTagName(tag);
    if (typeof commit.message !== 'string') throw new TypeError('commit.message must be a string');
    const { author, committer } = commitIdents(commit);

    for (const modify of changes.modifies) {
      if (marks.has(modify.contentHash)) continue;
      const mark = nextMark++;
      marks.set(modify.contentHash, mark);
      out.text(`blob\nmark :${mark}\ndata ${modify.size}\n`);
      // Inline rather than a checking helper generator: that extra async layer doubled the cost of
      // iterating a one-chunk content (0.73 → 1.5 µs per blob, Node 24 here), ~20 ms of the 220 ms
      // the 22,000-blob benchmark history takes (bench/git-export.ts).
      let seen = 0;
      for await (const chunk of await options.openContent(modify.contentHash)) {
        seen += chunk.length;
        // Checked before the chunk goes out: bytes past the announced size would be read by
        // fast-import as the next command.
        if (seen > modify.size) throw sizeMismatch(modify, seen);
        out.bytes(chunk);
        if (out.hasReady) for (const ready of out.take()) yield ready;
      }
      if (seen !== modify.size) throw sizeMismatch(modify, seen);
      out.text(NEWLINE);
    }

    const mark = nextMark++;
    const message = Buffer.from(commit.message, 'utf8');
    out.text(`commit ${ref}\nmark :${mark}\nauthor ${author}\ncommitter ${committer}\ndata ${message.length}\n`);
    out.bytes(message);
    out.text(parent === null ? NEWLINE : `\nfrom ${parent}\n`);
    for (const path of changes.deletes) writePathLine(out, 'D ', path);
    for (const modify of changes.modifies) writePathLine(out, `M ${modify.mode} :${marks.get(modify.contentHash)} `, modify.path);
    out.text(NEWLINE);
    for (const tag of [...commit.tags].sort()) out.text(`reset refs/tags/${tag}\nfrom :${mark}\n\n`);
    parent = `:${mark}`;
    if (out.hasReady) for (const ready of out.take()) yield ready;
  }
  out.text('done\n');
  out.flush();
  for (const ready of out.take()) yield ready;
}

function writePathLine(out: ChunkBatcher, prefix: string, path: Buffer): void {
  out.text(prefix);
  out.bytes(pathNeedsQuoting(path) ? quotePath(path) : path);
  out.text(NEWLINE);
}

function sizeMismatch(modify: PreparedModify, seen: number): StrataError {
  return new StrataError('CONTENT_CORRUPT', {
    message: `Content ${modify.contentHash} of ${modify.path.toString('utf8')} has ${seen > modify.size ? 'at least' : 'only'} ${seen} bytes, not the recorded ${modify.size}`,
    details: { hash: modify.contentHash, path: modify.path.toString('utf8'), expected: modify.size },
  });
}
