// An incremental parser for `git fast-export` output (the fast-import language, git-fast-import(1)):
// an async generator of events that reads its input only as fast as the events are taken.
//
// Memory is bounded whatever the stream holds: blob bytes are never collected — a blob event's `data`
// reads them straight from the input while the consumer iterates it (and what the consumer leaves
// unread is skipped when it asks for the next event); lines are limited to maxLineBytes and
// commit/tag messages to maxMessageBytes. A commit event does hold that commit's list of file
// changes (a small object and a path or two each): memory follows the largest commit, not history.
//
// Data given `inline` (`M 100644 inline <path>` followed by `data`) arrives as a blob event with
// `inlineIndex` set, before the commit event whose change refers to that index.
//
// Anything malformed — an unknown command, a missing required line, a bad mark or identity, a data
// block or line cut off by the end of the input, a missing `done` after `feature done` — is a
// GIT_STREAM_INVALID error naming the byte offset; a path that is not UTF-8 is INVALID_UTF8. The
// parser reads at most one byte past what the current event needs (the optional LF after a data
// block), so a truncated stream fails as soon as its end is reached, never hangs.
//
// For importers: events are not interpreted. `git fast-export --all` writes a commit under the first
// ref it reaches it by, often a tag (`commit refs/tags/v1`), and may set a branch only later
// (`reset refs/heads/main` + `from :<mark>`), so follow marks and the last `commit`/`reset` per ref,
// not the ref named on each commit.
import { ByteReader } from './byte-reader.js';
import { DataStream, parseDataHeader, readDataBytes } from './data-block.js';
import { type BlobData, type BlobEvent, type CommitEvent, type CommitIsh, type FastExportEvent, type FileChange, type GitIdent, streamError, type TagEvent } from './fast-export-events.js';
import { after, parseCommitIsh, parseFileChange, parseIdent, parseMark } from './fast-export-lines.js';

export type * from './fast-export-events.js';

export interface ParseFastExportOptions {
  /** longest command line accepted (paths are on these lines); default 1 MiB */
  maxLineBytes?: number;
  /** largest commit or tag message accepted; default 16 MiB */
  maxMessageBytes?: number;
}

// Features git's fast-import knows (fast-import.c parse_one_feature). An unknown one must fail the
// stream, as it does in git: the stream relies on something we would silently ignore.
const KNOWN_FEATURES = new Set(['date-format', 'import-marks', 'import-marks-if-exists', 'export-marks', 'alias', 'rewrite-submodules-to', 'rewrite-submodules-from', 'get-mark', 'cat-blob', 'relative-marks', 'no-relative-marks', 'done', 'force', 'notes', 'ls']);

export async function* parseFastExport(input: AsyncIterable<Uint8Array>, options: ParseFastExportOptions = {}): AsyncGenerator<FastExportEvent, void, undefined> {
  const parser = new Parser(new ByteReader(input[Symbol.asyncIterator]()), options.maxLineBytes ?? 1024 * 1024, options.maxMessageBytes ?? 16 * 1024 * 1024);
  try {
    yield* parser.events();
  } finally {
    await parser.reader.close();
  }
}

const LF = 0x0a;

/** A blob's data already in memory, as the BlobData a DataStream would give. */
function heldData(bytes: Buffer): BlobData {
  let started = false;
  return {
    async *[Symbol.asyncIterator]() {
      if (started) throw new TypeError('blob data can be iterated only once');
      started = true;
      yield bytes;
    },
  };
}

function utf8(text: Buffer): string {
  return text.toString('utf8');
}

class Parser {
  private pushedBack: Buffer | null = null;
  private lineOffset = 0;
  private inlineCount = 0;
  private doneRequired = false;

  constructor(
    readonly reader: ByteReader,
    private readonly maxLineBytes: number,
    private readonly maxMessageBytes: number,
  ) {}

  /** The next line that is not a comment; null at the end of the input. */
  private async line(): Promise<Buffer | null> {
    if (this.pushedBack !== null) {
      const line = this.pushedBack;
      this.pushedBack = null;
      return line;
    }
    for (;;) {
      this.lineOffset = this.reader.offset;
      const line = await this.reader.readLine(this.maxLineBytes);
      if (line === null || line[0] !== 0x23 /* # */) return line;
    }
  }

  /**
   * The next line when the held input chunk has all of it (and it is no comment), without waiting;
   * else undefined, and line() reads it. The file-change lines of a push are most of its lines.
   */
  private heldLine(): Buffer | undefined {
    if (this.pushedBack !== null) return undefined;
    const chunk = this.reader.held;
    const pos = this.reader.heldPos;
    const lf = chunk.indexOf(LF, pos);
    if (lf < 0 || lf - pos > this.maxLineBytes || chunk[pos] === 0x23 /* # */) return undefined;
    this.lineOffset = this.reader.offset;
    this.reader.skipHeld(lf + 1 - pos);
    return chunk.subarray(pos, lf);
  }

  /** A line that must be there: the end of the input here means the stream was cut off. */
  private async requiredLine(what: string): Promise<Buffer> {
    const line = await this.line();
    if (line === null) throw streamError(`the input ends where ${what} was expected (truncated?)`, this.reader.offset);
    return line;
  }

  private invalid(reason: string, line?: Buffer): Error {
    return streamError(reason, this.lineOffset, line);
  }

  async *events(): AsyncGenerator<FastExportEvent, void, undefined> {
    for (;;) {
      const line = this.heldLine() ?? (await this.line());
      if (line === null) {
        if (this.doneRequired) throw streamError('the input ends without the `done` its `feature done` promised (truncated?)', this.reader.offset);
        return;
      }
      if (line.length === 0) continue;
      const space = line.indexOf(0x20);
      const command = line.toString('latin1', 0, space < 0 ? line.length : space);
      const arg = space < 0 ? null : line.subarray(space + 1);
      if (arg !== null && arg.length === 0) throw this.invalid('the command needs an argument', line);
      switch (space < 0 ? command : `${command} `) {
        case 'blob': {
          const held = this.heldBlob();
          if (held !== null) yield held;
          else yield* this.blob(null);
          break;
        }
        case 'commit ':
          yield* this.commit(arg!.toString('utf8'));
          break;
        case 'tag ':
          yield await this.tag(arg!.toString('utf8'));
          break;
        case 'reset ':
          yield await this.reset(arg!.toString('utf8'));
          break;
        case 'alias':
          yield await this.alias();
          break;
        case 'feature ':
          yield this.feature(arg!.toString('utf8'), line);
          break;
        case 'option ':
          yield { type: 'option', value: arg!.toString('utf8') };
          break;
        case 'progress ':
          yield { type: 'progress', message: arg!.toString('utf8') };
          break;
        case 'checkpoint':
          yield { type: 'checkpoint' };
          break;
        case 'done':
          // Like git, read nothing after `done`.
          yield { type: 'done' };
          return;
        default:
          throw this.invalid('unknown or unsupported command', line);
      }
    }
  }

  private feature(text: string, line: Buffer): FastExportEvent {
    const eq = text.indexOf('=');
    const name = eq < 0 ? text : text.slice(0, eq);
    const value = eq < 0 ? null : text.slice(eq + 1);
    if (!KNOWN_FEATURES.has(name)) throw this.invalid('unknown feature', line);
    // Other date formats (rfc2822, now) would change how every identity line reads.
    if (name === 'date-format' && value !== 'raw' && value !== 'raw-permissive') throw this.invalid('only the raw date format is supported', line);
    if (name === 'done') this.doneRequired = true;
    return { type: 'feature', name, value };
  }

  private async *blob(inlineIndex: number | null): AsyncGenerator<BlobEvent, void, undefined> {
    const cursor = { line: await this.requiredLine('a blob') };
    // Inline data is only `data`: no mark of its own.
    const mark = inlineIndex === null ? await this.optional(cursor, 'mark ', this.markOf, 'data') : null;
    const originalOid = inlineIndex === null ? await this.optional(cursor, 'original-oid ', utf8, 'data') : null;
    const header = parseDataHeader(cursor.line, this.lineOffset);
    const data = new DataStream(this.reader, header, this.maxLineBytes);
    yield { type: 'blob', mark, originalOid, size: header.kind === 'counted' ? header.size : null, inlineIndex, data };
    await data.finish();
  }

  /**
   * A blob as `git fast-export` writes it — `mark`, `original-oid`, `data <n>`, the n bytes and an LF
   * — when all of it is in the input chunk already held: read without waiting, `bytes` set. Each
   * line and await of the general path allocates, and a push's 5,300 small blobs made that a third
   * of its garbage (bench/git-push.ts). Anything else (another form, a line too long or invalid, a
   * block that goes on in the next chunk): null, nothing consumed, and blob() reads it.
   */
  private heldBlob(): BlobEvent | null {
    if (this.pushedBack !== null) return null;
    const chunk = this.reader.held;
    const start = this.reader.heldPos;
    let pos = start;
    const nextLine = (): Buffer | null => {
      const lf = chunk.indexOf(LF, pos);
      if (lf < 0 || lf - pos > this.maxLineBytes) return null;
      const line = chunk.subarray(pos, lf);
      pos = lf + 1;
      return line;
    };
    try {
      let line = nextLine();
      if (line === null) return null;
      const markText = after(line, 'mark ');
      const mark = markText === null ? null : parseMark(markText, 0, line);
      if (markText !== null) line = nextLine();
      if (line === null) return null;
      const oidText = after(line, 'original-oid ');
      const originalOid = oidText === null ? null : oidText.toString('utf8');
      if (oidText !== null) line = nextLine();
      if (line === null) return null;
      const header = parseDataHeader(line, 0);
      // The byte after the data must be here too, to tell whether it is the optional LF.
      if (header.kind !== 'counted' || pos + header.size >= chunk.length) return null;
      const bytes = chunk.subarray(pos, pos + header.size);
      pos += header.size;
      if (chunk[pos] === LF) pos += 1;
      this.reader.skipHeld(pos - start);
      return { type: 'blob', mark, originalOid, size: header.size, inlineIndex: null, data: heldData(bytes), bytes };
    } catch {
      return null; // invalid: blob() reads it again and reports it where it is
    }
  }

  /** If `cursor.line` starts with `prefix`: parses the rest, moves to the next line, returns the value. */
  private async optional<T>(cursor: { line: Buffer }, prefix: string, parse: (text: Buffer, line: Buffer) => T, next: string): Promise<T | null> {
    const text = after(cursor.line, prefix);
    if (text === null) return null;
    const value = parse(text, cursor.line);
    cursor.line = await this.requiredLine(next);
    return value;
  }

  private async *commit(ref: string): AsyncGenerator<FastExportEvent, void, undefined> {
    const cursor = { line: await this.requiredLine('the commit header') };
    const mark = await this.optional(cursor, 'mark ', this.markOf, 'the commit header');
    const originalOid = await this.optional(cursor, 'original-oid ', utf8, 'the commit header');
    const author = await this.optional(cursor, 'author ', this.identOf, 'committer');
    const committerText = after(cursor.line, 'committer ');
    if (committerText === null) throw this.invalid('expected committer', cursor.line);
    const committer = parseIdent(committerText, this.lineOffset, cursor.line);
    cursor.line = await this.requiredLine('data');
    const encoding = await this.optional(cursor, 'encoding ', utf8, 'data');
    const message = await readDataBytes(this.reader, parseDataHeader(cursor.line, this.lineOffset), this.maxMessageBytes, this.maxLineBytes);

    let next = await this.line();
    let from: CommitIsh | null = null;
    const fromText = next === null ? null : after(next, 'from ');
    if (fromText !== null) {
      from = parseCommitIsh(fromText, this.lineOffset, next!);
      next = await this.line();
    }
    const merges: CommitIsh[] = [];
    for (;;) {
      const mergeText = next === null ? null : after(next, 'merge ');
      if (mergeText === null) break;
      merges.push(parseCommitIsh(mergeText, this.lineOffset, next!));
      next = await this.line();
    }
    const fileChanges: FileChange[] = [];
    // A blank line ends the commit (and is consumed); any other command ends it and is read again.
    while (next !== null && next.length > 0) {
      const change = parseFileChange(next, this.lineOffset);
      if (change === null) {
        this.pushedBack = next;
        break;
      }
      if ((change.kind === 'modify' || change.kind === 'note') && change.dataref.kind === 'inline') {
        const inlineIndex = this.inlineCount++;
        change.dataref = { kind: 'inline', inlineIndex };
        yield* this.blob(inlineIndex);
      }
      fileChanges.push(change);
      next = this.heldLine() ?? (await this.line());
    }
    const event: CommitEvent = { type: 'commit', ref, mark, originalOid, author, committer, encoding, message, from, merges, fileChanges };
    yield event;
  }

  private async tag(name: string): Promise<TagEvent> {
    const cursor = { line: await this.requiredLine('from') };
    const mark = await this.optional(cursor, 'mark ', this.markOf, 'from');
    const fromText = after(cursor.line, 'from ');
    if (fromText === null) throw this.invalid('expected from', cursor.line);
    const from = parseCommitIsh(fromText, this.lineOffset, cursor.line);
    cursor.line = await this.requiredLine('data');
    const originalOid = await this.optional(cursor, 'original-oid ', utf8, 'data');
    const tagger = await this.optional(cursor, 'tagger ', this.identOf, 'data');
    const message = await readDataBytes(this.reader, parseDataHeader(cursor.line, this.lineOffset), this.maxMessageBytes, this.maxLineBytes);
    return { type: 'tag', name, mark, from, originalOid, tagger, message };
  }

  private readonly markOf = (text: Buffer, line: Buffer): number => parseMark(text, this.lineOffset, line);
  private readonly identOf = (text: Buffer, line: Buffer): GitIdent => parseIdent(text, this.lineOffset, line);

  private async reset(ref: string): Promise<FastExportEvent> {
    const line = await this.line();
    const text = line === null ? null : after(line, 'from ');
    if (text !== null) return { type: 'reset', ref, from: parseCommitIsh(text, this.lineOffset, line!) };
    if (line !== null && line.length > 0) this.pushedBack = line;
    return { type: 'reset', ref, from: null };
  }

  private async alias(): Promise<FastExportEvent> {
    const markLine = await this.requiredLine('mark');
    const markText = after(markLine, 'mark ');
    if (markText === null) throw this.invalid('expected mark', markLine);
    const mark = parseMark(markText, this.lineOffset, markLine);
    const toLine = await this.requiredLine('to');
    const toText = after(toLine, 'to ');
    if (toText === null) throw this.invalid('expected to', toLine);
    return { type: 'alias', mark, to: parseCommitIsh(toText, this.lineOffset, toLine) };
  }
}
