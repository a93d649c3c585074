// Parsing of single command lines: marks, object names, identities, file changes. Each function takes
// the line (without its LF) and the stream offset where it began, for the error.
import { StrataError } from '../errors.js';
import { type CommitIsh, type DataRef, type FileChange, type GitFileMode, type GitIdent, streamError } from './fast-export-events.js';
import { unquotePath } from './quote.js';

const SPACE = 0x20;
const QUOTE = 0x22;
const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const MODES: Record<string, GitFileMode> = {
  '100644': '100644',
  '644': '100644',
  '100755': '100755',
  '755': '100755',
  '120000': '120000',
  '160000': '160000',
  '040000': '040000',
};
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The text after `prefix` if the line starts with it, else null. */
export function after(line: Buffer, prefix: string): Buffer | null {
  if (line.length < prefix.length) return null;
  for (let i = 0; i < prefix.length; i++) if (line[i] !== prefix.charCodeAt(i)) return null;
  return line.subarray(prefix.length);
}

export function parseMark(text: Buffer, offset: number, line: Buffer): number {
  const s = text.toString('latin1');
  const mark = Number(s.slice(1));
  if (s[0] !== ':' || !/^:[0-9]+$/.test(s) || !Number.isSafeInteger(mark) || mark === 0) throw streamError('expected a mark :<number ≥ 1>', offset, line);
  return mark;
}

export function parseCommitIsh(text: Buffer, offset: number, line: Buffer): CommitIsh {
  if (text[0] === 0x3a) return { kind: 'mark', mark: parseMark(text, offset, line) };
  const s = text.toString('utf8');
  if (OBJECT_ID.test(s)) return { kind: 'oid', oid: s };
  if (s === '' || s.includes(' ')) throw streamError('expected a mark, an object id or a ref', offset, line);
  return { kind: 'ref', ref: s };
}

/** `Name <email> <seconds> <+-hhmm>`, as git's fast-import parse_ident reads it (raw date format). */
export function parseIdent(text: Buffer, offset: number, line: Buffer): GitIdent {
  const lt = firstOf(text, 0);
  if (lt < 0 || text[lt] !== 0x3c) throw streamError('an identity needs <email>', offset, line);
  if (lt > 0 && text[lt - 1] !== SPACE) throw streamError('an identity needs a space before <email>', offset, line);
  const gt = firstOf(text, lt + 1);
  if (gt < 0 || text[gt] !== 0x3e) throw streamError('an identity needs <email> closed by >', offset, line);
  const date = /^ ([0-9]+) ([+-][0-9]{4})$/.exec(text.toString('latin1', gt + 1));
  const timeSec = Number(date?.[1]);
  if (date === null || !Number.isSafeInteger(timeSec)) throw streamError('an identity needs a raw date `<seconds> <+hhmm>`', offset, line);
  return {
    name: text.toString('utf8', 0, Math.max(0, lt - 1)),
    email: text.toString('utf8', lt + 1, gt),
    timeSec,
    tz: date[2]!,
  };
}

function firstOf(text: Buffer, from: number): number {
  for (let i = from; i < text.length; i++) if (text[i] === 0x3c || text[i] === 0x3e) return i;
  return -1;
}

/** `M`, `D`, `C`, `R`, `deleteall`, `N`; null if the line is none of them (the commit has ended). */
export function parseFileChange(line: Buffer, offset: number): FileChange | null {
  if (line.length === 9 && line.toString('latin1') === 'deleteall') return { kind: 'deleteall' };
  if (line.length < 2 || line[1] !== SPACE) return null;
  const kind = line[0];
  if (kind === 0x4d /* M */) {
    const s1 = line.indexOf(SPACE, 2);
    const s2 = s1 < 0 ? -1 : line.indexOf(SPACE, s1 + 1);
    if (s2 < 0) throw streamError('expected M <mode> <dataref> <path>', offset, line);
    const mode = MODES[line.toString('latin1', 2, s1)];
    if (mode === undefined) throw streamError('unknown file mode', offset, line);
    return { kind: 'modify', mode, dataref: parseDataRef(line.subarray(s1 + 1, s2), offset, line), path: parsePath(line, s2 + 1, offset) };
  }
  if (kind === 0x44 /* D */) return { kind: 'delete', path: parsePath(line, 2, offset) };
  if (kind === 0x43 /* C */ || kind === 0x52 /* R */) {
    let from: string;
    let next: number;
    if (line[2] === QUOTE) {
      const quoted = unquotePath(line, 2);
      if (quoted === null) throw streamError('badly quoted path', offset, line);
      from = decodePath(quoted.bytes, offset);
      next = quoted.end;
    } else {
      next = line.indexOf(SPACE, 2);
      if (next < 0) throw streamError('expected two paths', offset, line);
      from = decodePath(line.subarray(2, next), offset);
    }
    if (line[next] !== SPACE || next + 1 >= line.length) throw streamError('expected two paths', offset, line);
    const to = parsePath(line, next + 1, offset);
    return kind === 0x43 ? { kind: 'copy', from, to } : { kind: 'rename', from, to };
  }
  if (kind === 0x4e /* N */) {
    const s1 = line.indexOf(SPACE, 2);
    if (s1 < 0) throw streamError('expected N <dataref> <commit-ish>', offset, line);
    return { kind: 'note', dataref: parseDataRef(line.subarray(2, s1), offset, line), commit: parseCommitIsh(line.subarray(s1 + 1), offset, line) };
  }
  return null;
}

/** `inlineIndex` is filled in by the parser, which numbers inline data blocks. */
function parseDataRef(text: Buffer, offset: number, line: Buffer): DataRef {
  if (text[0] === 0x3a) return { kind: 'mark', mark: parseMark(text, offset, line) };
  const s = text.toString('latin1');
  if (s === 'inline') return { kind: 'inline', inlineIndex: -1 };
  if (OBJECT_ID.test(s)) return { kind: 'oid', oid: s };
  throw streamError('expected a data reference (:mark, object id or inline)', offset, line);
}

/** The path from `start` to the end of the line, quoted or not. */
function parsePath(line: Buffer, start: number, offset: number): string {
  if (start >= line.length) throw streamError('expected a path', offset, line);
  if (line[start] !== QUOTE) return decodePath(line.subarray(start), offset);
  const quoted = unquotePath(line, start);
  if (quoted === null || quoted.end !== line.length) throw streamError('badly quoted path', offset, line);
  return decodePath(quoted.bytes, offset);
}

/** Paths are bytes to git; Strata's are Unicode, so a path that is not UTF-8 is refused here. */
function decodePath(bytes: Uint8Array, offset: number): string {
  if (bytes.length === 0) throw streamError('empty path', offset);
  try {
    return strictUtf8.decode(bytes);
  } catch (error) {
    throw new StrataError('INVALID_UTF8', { message: `A path in the git stream at byte ${offset} is not UTF-8`, details: { field: 'path', offset }, cause: error });
  }
}
