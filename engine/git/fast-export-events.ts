// The events parseFastExport yields: git's fast-import language (what `git fast-export` writes),
// one event per command, fields parsed but not interpreted (marks stay marks, paths stay as git has
// them). Names follow git-fast-import(1).
import { StrataError } from '../errors.js';

/** `Name <email> <seconds> <tz>` from an author, committer or tagger line. */
export interface GitIdent {
  name: string;
  email: string;
  /** seconds since the epoch */
  timeSec: number;
  /** `+hhmm` / `-hhmm` as written */
  tz: string;
}

/** What `from`, `merge`, `reset ... from` and `alias ... to` name. */
export type CommitIsh = { kind: 'mark'; mark: number } | { kind: 'oid'; oid: string } | { kind: 'ref'; ref: string };

/**
 * Where a file's bytes come from: an earlier blob's mark, an object already in the target repository,
 * or the blob event with this `inlineIndex` that came just before the commit event.
 */
export type DataRef = { kind: 'mark'; mark: number } | { kind: 'oid'; oid: string } | { kind: 'inline'; inlineIndex: number };

export type GitFileMode = '100644' | '100755' | '120000' | '160000' | '040000';

export type FileChange =
  | { kind: 'modify'; mode: GitFileMode; dataref: DataRef; path: string }
  | { kind: 'delete'; path: string }
  | { kind: 'copy'; from: string; to: string }
  | { kind: 'rename'; from: string; to: string }
  | { kind: 'deleteall' }
  | { kind: 'note'; dataref: DataRef; commit: CommitIsh };

/**
 * A blob's bytes, read straight from the input as the consumer iterates. Iterate it (once) before
 * asking for the next event; whatever is left unread is skipped when the parser moves on, after which
 * it cannot be read any more.
 */
export interface BlobData extends AsyncIterable<Buffer> {}

export interface BlobEvent {
  type: 'blob';
  mark: number | null;
  originalOid: string | null;
  /** null for the `data <<DELIM` form, whose length is only known at its end */
  size: number | null;
  /** set for the data of an `M <mode> inline <path>` (or `N inline`), numbered from 0 in the stream */
  inlineIndex: number | null;
  data: BlobData;
  /**
   * The whole data, when the parser had all of it at hand (a view into the input, which stays valid):
   * `data` yields the same bytes. Unset: read `data`.
   */
  bytes?: Buffer;
}

export interface CommitEvent {
  type: 'commit';
  ref: string;
  mark: number | null;
  originalOid: string | null;
  author: GitIdent | null;
  committer: GitIdent;
  encoding: string | null;
  message: Buffer;
  from: CommitIsh | null;
  /** more than one parent: a merge (a linear import rejects it) */
  merges: CommitIsh[];
  fileChanges: FileChange[];
}

export interface TagEvent {
  type: 'tag';
  name: string;
  mark: number | null;
  from: CommitIsh;
  originalOid: string | null;
  tagger: GitIdent | null;
  message: Buffer;
}

export type FastExportEvent =
  | { type: 'feature'; name: string; value: string | null }
  | { type: 'option'; value: string }
  | BlobEvent
  | CommitEvent
  | { type: 'reset'; ref: string; from: CommitIsh | null }
  | TagEvent
  | { type: 'alias'; mark: number; to: CommitIsh }
  | { type: 'progress'; message: string }
  | { type: 'checkpoint' }
  | { type: 'done' };

/** GIT_STREAM_INVALID naming the byte offset where the input went wrong and, if any, the line. */
export function streamError(reason: string, offset: number, line?: Uint8Array): StrataError {
  const details: Record<string, unknown> = { reason, offset };
  let message = `Invalid git fast-import stream at byte ${offset}: ${reason}`;
  if (line !== undefined) {
    const excerpt = Buffer.from(line.subarray(0, 80)).toString('utf8') + (line.length > 80 ? '…' : '');
    details['line'] = excerpt;
    message += ` (line ${JSON.stringify(excerpt)})`;
  }
  return new StrataError('GIT_STREAM_INVALID', { message, details });
}
