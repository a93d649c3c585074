// The input of the fast-import writer: one linear chain of snapshots as commits, each with its changes
// relative to the previous one. Checks here are for our own callers' mistakes (TypeError), and the
// normalisations (identity text, change order) are what make the output byte-identical every time.

export interface GitIdentity {
  name: string;
  email: string;
}

export type ExportChange =
  /** `symlink`: a symbolic link, mode 120000 with the target as its blob (`executable` is then ignored) */
  | { kind: 'modify'; path: string; contentHash: string; size: number; executable: boolean; symlink?: boolean }
  | { kind: 'delete'; path: string };

export interface ExportCommit {
  /** Stored as these exact UTF-8 bytes: nothing is appended or trimmed. */
  message: string;
  actor: GitIdentity;
  /** Snapshot time, ms since the epoch; written in whole seconds, UTC (`+0000`). */
  timeMs: number;
  /** Lightweight tags on this commit (refs/tags/<name>). */
  tags: readonly string[];
  /** Changes from the previous commit; for the first commit of a full export, its whole tree. */
  changes: readonly ExportChange[];
  /**
   * Exact author and committer lines (`Name <email> <seconds> <tz>`) of a commit received from git;
   * when present they replace `actor` and `timeMs`, so the commit keeps its id.
   */
  ident?: { author: string; committer: string };
}

const IDENT_LINE = /^[^<>\n]* <[^<>\n]*> \d+ [+-]\d{4}$/;

/** The author and committer lines a commit is written with. */
export function commitIdents(commit: ExportCommit): { author: string; committer: string } {
  if (commit.ident === undefined) {
    const ident = formatIdent(commit.actor, commit.timeMs);
    return { author: ident, committer: ident };
  }
  for (const line of [commit.ident.author, commit.ident.committer]) {
    if (typeof line !== 'string' || !IDENT_LINE.test(line)) throw new TypeError(`not a git identity line: ${JSON.stringify(line)}`);
  }
  return commit.ident;
}

export interface PreparedModify {
  path: Buffer;
  contentHash: string;
  size: number;
  mode: GitFileMode;
}

/** The git modes a Strata file can have: regular, executable, symbolic link. */
export type GitFileMode = '100644' | '100755' | '120000';

export function gitModeOf(change: { executable: boolean; symlink?: boolean }): GitFileMode {
  return change.symlink === true ? '120000' : change.executable === true ? '100755' : '100644';
}

export interface PreparedChanges {
  deletes: Buffer[];
  modifies: PreparedModify[];
}

/**
 * Deletes first, then modifies, each in byte order of the UTF-8 path. fast-import applies commands in
 * order; with every delete before every modify, the resulting tree never depends on how it treats
 * `D a/b` after `M a` in the same commit (a directory turned into a file: git 2.39 keeps the file, we
 * need not rely on that). A path appears at most once.
 */
export function prepareChanges(changes: readonly ExportChange[]): PreparedChanges {
  if (!Array.isArray(changes)) throw new TypeError('commit.changes must be an array');
  const deletes: Buffer[] = [];
  const modifies: PreparedModify[] = [];
  for (const change of changes) {
    const path = encodePath(change?.path);
    if (change.kind === 'delete') {
      deletes.push(path);
    } else if (change.kind === 'modify') {
      if (typeof change.contentHash !== 'string' || change.contentHash === '') throw new TypeError(`change ${change.path}: contentHash must be a non-empty string`);
      if (!Number.isSafeInteger(change.size) || change.size < 0) throw new TypeError(`change ${change.path}: size must be a non-negative integer`);
      modifies.push({ path, contentHash: change.contentHash, size: change.size, mode: gitModeOf(change) });
    } else {
      throw new TypeError(`change ${String(change.path)}: kind must be 'modify' or 'delete'`);
    }
  }
  deletes.sort(Buffer.compare);
  modifies.sort((a, b) => Buffer.compare(a.path, b.path));
  assertDistinct([...deletes, ...modifies.map((m) => m.path)].sort(Buffer.compare));
  return { deletes, modifies };
}

function encodePath(path: unknown): Buffer {
  if (typeof path !== 'string' || path === '' || path.startsWith('/') || path.endsWith('/') || path.includes('\0') || path.includes('//')) {
    throw new TypeError(`change path must be a relative file path, got ${JSON.stringify(path)}`);
  }
  return Buffer.from(path, 'utf8');
}

function assertDistinct(sorted: Buffer[]): void {
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i]!.equals(sorted[i - 1]!)) throw new TypeError(`path ${sorted[i]!.toString('utf8')} changes twice in one commit`);
  }
}

/**
 * `Name <email> <seconds> +0000`. git refuses or `fsck` flags `<`, `>` and line breaks in either part
 * and an empty name, so those characters are dropped (always the same way: the output stays
 * deterministic) and an empty name becomes `unknown`.
 */
export function formatIdent(actor: GitIdentity, timeMs: number): string {
  if (typeof actor?.name !== 'string' || typeof actor.email !== 'string') throw new TypeError('actor must be {name, email} strings');
  if (!Number.isFinite(timeMs) || timeMs < 0) throw new TypeError(`timeMs must be a non-negative number, got ${timeMs}`);
  const name = clean(actor.name) || 'unknown';
  return `${name} <${clean(actor.email)}> ${Math.floor(timeMs / 1000)} +0000`;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed.
const IDENT_JUNK = /[<>\u0000-\u001f\u007f]/g;

function clean(text: string): string {
  return text.replace(IDENT_JUNK, '').trim();
}

/** git's ref-name rules (`git check-ref-format`) for one tag name; Strata's tag rule is stricter. */
export function assertTagName(tag: unknown): asserts tag is string {
  const valid =
    typeof tag === 'string' &&
    tag !== '' &&
    tag !== '@' &&
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are refused.
    !/[\u0000-\u0020\u007f~^:?*[\\]|\.\.|@\{|\/\/|^\/|\/$|\.$|\.lock(\/|$)|(^|\/)\./.test(tag);
  if (!valid) throw new TypeError(`tag ${JSON.stringify(tag)} is not a valid git ref name`);
}
