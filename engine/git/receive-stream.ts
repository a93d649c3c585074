// Reading a pushed `git fast-export` stream into something the engine can check before it changes
// anything: every blob goes into the content store as it streams by (with its git blob id computed on
// the way), and the commits that end up on refs/heads/main are resolved into one linear list with
// their parent. Merges, other branches and anything we could not export back identically are refused
// here, before a single version is written (blobs stored meanwhile are unreferenced: gc takes them).
//
// Branch semantics follow git-fast-import(1), with one deliberate difference: a `commit` without
// `from` on refs/heads/main is a root commit, never a continuation of the project's tip. git
// fast-export writes no `from` for a root commit, and also for the first commit of `A..B` when it was
// not asked for --reference-excluded-parents: grafting that partial commit onto the tip mixed both
// trees (issue 13). As a root, it either is the project's first commit or diverges from it (409).
// A `reset <ref>` without `from` makes the next commit on it a root, as in git.
//
// The stream must end with `done` (`git fast-export --use-done-feature`): a stream cut short at a
// command boundary parses cleanly, and receiving its prefix would apply half a push.
//
// Every path must be one the file API accepts (engine/paths.ts): a name git allows but the API refuses
// (a newline, a tab, U+202E) could otherwise be stored and then never read, renamed or deleted.
import { createHash } from 'node:crypto';
import { StrataError } from '../errors.js';
import { normalizeProjectPath } from '../paths.js';
import { quoteSafely } from '../unsafe-text.js';
import type { ContentHash } from '../types.js';
import type { BlobEvent, CommitEvent, CommitIsh, DataRef, GitIdent } from './fast-export-events.js';
import { parseFastExport } from './fast-export-parser.js';

export interface ReceivedBlob {
  hash: ContentHash;
  size: number;
  gitId: string;
  /** false when the bytes seen on the way in cannot be a dataset manifest (no store read needed to tell) */
  maybeManifest: boolean;
}

/** How a canonical dataset manifest (engine/datasets/manifest.ts) begins. */
const MANIFEST_PREFIX = Buffer.from('{"format":"strata.da');

export type ReceivedChange =
  /** `symlink`: mode 120000, the blob is the link's target */
  | { kind: 'modify'; path: string; executable: boolean; symlink: boolean; blob: ReceivedBlob | { oid: string } }
  | { kind: 'delete'; path: string }
  | { kind: 'rename'; from: string; to: string }
  | { kind: 'copy'; from: string; to: string }
  | { kind: 'deleteall' };

export interface ReceivedCommit {
  author: string;
  committer: string;
  message: string;
  originalOid: string | null;
  changes: ReceivedChange[];
  /** lightweight or annotated tags that point here */
  tags: string[];
}

export interface ReceivedHistory {
  /** the commit the first one continues: null = a root commit */
  base: string | null;
  commits: ReceivedCommit[];
}

type Tip = { kind: 'commit'; commit: Parsed } | { kind: 'oid'; oid: string } | { kind: 'root' };
interface Parsed {
  event: CommitEvent;
  parent: Tip;
  changes: ReceivedChange[];
  tags: string[];
  /** the commit as received, when made for onMainCommit already */
  received?: ReceivedCommit;
}

/**
 * What a commit written to refs/heads/main continues, as the stream goes: the commit on main just
 * before it in the stream, a commit outside the stream (its id), nothing (a root), or something else.
 */
export type Continues = { kind: 'previous' } | { kind: 'oid'; oid: string } | { kind: 'root' } | { kind: 'other' };

export interface ReadPushOptions {
  /**
   * Each commit on refs/heads/main as soon as it is parsed (tags not yet known): a receiver can work
   * on it while the rest streams in. Only a hint: what readPushedHistory returns is what counts.
   */
  onMainCommit?(commit: ReceivedCommit, continues: Continues): void;
}

const MAIN = 'refs/heads/main';
const TAG_PREFIX = 'refs/tags/';

function notLinear(message: string): StrataError {
  return new StrataError('GIT_NOT_LINEAR', { message });
}

function unsupported(message: string): StrataError {
  return new StrataError('GIT_NOT_REPRESENTABLE', { message });
}

export function identLine(ident: GitIdent): string {
  return `${ident.name} <${ident.email}> ${ident.timeSec} ${ident.tz}`;
}

export async function readPushedHistory(
  input: AsyncIterable<Uint8Array>,
  storeBlob: (bytes: AsyncIterable<Uint8Array>) => Promise<{ hash: ContentHash; size: number }>,
  storeBuffers: (datas: Uint8Array[]) => Promise<Array<{ hash: ContentHash; size: number }>> = (datas) => Promise.all(datas.map((data) => storeBlob(once(data)))),
  options: ReadPushOptions = {},
): Promise<ReceivedHistory> {
  const blobsByMark = new Map<number, ReceivedBlob>();
  const inline = new Map<number, ReceivedBlob>();
  const commitsByMark = new Map<number, Parsed>();
  const refs = new Map<string, Tip>([[MAIN, { kind: 'root' }]]);
  let done = false;
  const tagTargets: Array<{ name: string; target: Tip }> = [];

  const resolve = (ish: CommitIsh): Tip => {
    if (ish.kind === 'oid') return { kind: 'oid', oid: ish.oid };
    if (ish.kind === 'mark') {
      const commit = commitsByMark.get(ish.mark);
      if (commit === undefined) throw notLinear(`mark :${ish.mark} is not a commit of this stream`);
      return { kind: 'commit', commit };
    }
    const tip = refs.get(ish.ref);
    if (tip === undefined) throw notLinear(`unknown ref ${ish.ref}`);
    return tip;
  };

  const storing = new StoreWindow(storeBlob, storeBuffers);
  try {
    await parseEvents();
  } catch (error) {
    await storing.settle().catch(() => undefined);
    throw error;
  }
  // Every blob durable before anything is decided: the records that will point to them are committed
  // only after this returns.
  await storing.settle();

  function announce(parsed: Parsed, mainBefore: Tip): void {
    const { parent } = parsed;
    const continues: Continues =
      parent.kind === 'commit' ? (mainBefore.kind === 'commit' && parent.commit === mainBefore.commit ? { kind: 'previous' } : { kind: 'other' }) : parent.kind === 'oid' ? { kind: 'oid', oid: parent.oid } : { kind: 'root' };
    try {
      parsed.received = received(parsed);
    } catch {
      return; // refused later, in the same words as without the hint, if it ends up on main
    }
    options.onMainCommit!(parsed.received, continues);
  }

  async function parseEvents(): Promise<void> {
    for await (const event of parseFastExport(input)) {
      if (event.type === 'blob') {
        const blob = await receiveBlob(event, storing);
        if (event.inlineIndex !== null) inline.set(event.inlineIndex, blob);
        else if (event.mark !== null) blobsByMark.set(event.mark, blob);
      } else if (event.type === 'commit') {
        if (event.merges.length > 0) throw notLinear('the stream contains a merge commit');
        if (event.ref !== MAIN && !event.ref.startsWith(TAG_PREFIX)) throw notLinear(`the stream writes ${event.ref}; only ${MAIN} is received`);
        if (event.encoding !== null && event.encoding.toUpperCase() !== 'UTF-8') throw unsupported(`commit encoding ${event.encoding}`);
        const parent = event.from === null ? (refs.get(event.ref) ?? { kind: 'root' }) : resolve(event.from);
        const parsed: Parsed = { event, parent, changes: event.fileChanges.map((c) => toChange(c, blobsByMark, inline)), tags: [] };
        if (event.mark !== null) commitsByMark.set(event.mark, parsed);
        if (event.ref === MAIN && options.onMainCommit !== undefined) announce(parsed, refs.get(MAIN)!);
        refs.set(event.ref, { kind: 'commit', commit: parsed });
      } else if (event.type === 'reset') {
        if (event.ref !== MAIN && !event.ref.startsWith(TAG_PREFIX)) throw notLinear(`the stream writes ${event.ref}; only ${MAIN} is received`);
        refs.set(event.ref, event.from === null ? { kind: 'root' } : resolve(event.from));
      } else if (event.type === 'tag') {
        tagTargets.push({ name: event.name, target: resolve(event.from) });
      } else if (event.type === 'alias') {
        throw unsupported('alias commands are not supported');
      } else if (event.type === 'done') {
        done = true;
      }
    }
  }
  if (!done) {
    throw new StrataError('GIT_STREAM_INVALID', {
      message: 'The stream does not end with `done`: it may have been cut short, and nothing of it was applied (send it with `git fast-export --use-done-feature`)',
      details: { reason: 'no done' },
    });
  }

  for (const [ref, target] of refs) if (ref.startsWith(TAG_PREFIX)) tagTargets.push({ name: ref.slice(TAG_PREFIX.length), target });
  // The chain main ends at, walked back to where it leaves the stream.
  const chain: Parsed[] = [];
  let at = refs.get(MAIN)!;
  while (at.kind === 'commit') {
    chain.push(at.commit);
    at = at.commit.parent;
  }
  chain.reverse();
  const onChain = new Set(chain);
  for (const parsed of commitsByMark.values()) {
    if (!onChain.has(parsed)) throw notLinear('the stream has commits that are not on refs/heads/main');
  }
  for (const { name, target } of tagTargets) {
    if (target.kind !== 'commit') continue; // a tag on a commit the project has already: nothing new
    target.commit.tags.push(name);
  }
  const base = at.kind === 'oid' ? at.oid : null;
  return {
    base,
    commits: chain.map((p) => {
      const commit = p.received ?? received(p);
      commit.tags = [...new Set(p.tags)].sort();
      return commit;
    }),
  };
}

function received(p: Parsed): ReceivedCommit {
  return {
    author: identLine(p.event.author ?? p.event.committer),
    committer: identLine(p.event.committer),
    message: utf8(p.event.message),
    originalOid: p.event.originalOid,
    changes: p.changes,
    tags: [],
  };
}

/** A blob this size or smaller is read whole, and its store put is not waited for one by one. */
const SMALL_BLOB = 1024 * 1024;
/**
 * Blobs pending or in flight at most, and their bytes at most. The store commits what arrives while
 * it commits as one batch with one fsync: 256 in flight made a push's 5,300 blobs ~21 commits, and
 * its reading waited ~100 of ~300 ms for them over HTTP; 1,024 (~5 MB of such blobs) left ~20 ms.
 */
const STORE_WINDOW = 1024;
const STORE_WINDOW_BYTES = 16 * 1024 * 1024;
/** Small blobs go to the store together, this many (or bytes) at most per call. */
const SEND_BATCH = 128;
const SEND_BATCH_BYTES = 1024 * 1024;
/** A small blob's hash until its put resolves (readPushedHistory returns only after every put has). */
const PENDING_HASH = 'blake3:pending' as ContentHash;

/**
 * Blob puts in flight. A put resolves once the store made it durable (a group commit); waiting for
 * each in turn made a push one fsync per blob — 5,300 of them for 300 commits (bench/git-push.ts).
 * Small blobs go to the store whole, gathered into calls of up to SEND_BATCH (what one turn of the
 * event loop parsed), and the calls overlap; one call per blob kept ~10 objects alive per blob in
 * flight, which 1 MiB semi-spaces (`strata serve`) then copied scavenge after scavenge. The store's
 * hash (it hashes what it stores) is filled into each blob when its call resolves, and settle()
 * waits for all of them.
 */
class StoreWindow {
  readonly #inFlight = new Set<Promise<void>>();
  #pending: Array<{ data: Uint8Array; blob: ReceivedBlob }> = [];
  #pendingBytes = 0;
  #sendScheduled = false;
  /** blobs pending or in flight, and their bytes */
  #count = 0;
  #bytes = 0;
  /** add() waiting for room (one at a time: the parser awaits each add) */
  #wakeAdder: (() => void) | null = null;
  #failure: unknown = null;

  constructor(
    readonly put: (bytes: AsyncIterable<Uint8Array>) => Promise<{ hash: ContentHash; size: number }>,
    readonly putBuffers: (datas: Uint8Array[]) => Promise<Array<{ hash: ContentHash; size: number }>>,
  ) {}

  async add(data: Uint8Array, blob: ReceivedBlob): Promise<void> {
    if (this.#failure !== null) throw this.#failure;
    this.#pending.push({ data, blob });
    this.#pendingBytes += data.length;
    this.#count += 1;
    this.#bytes += data.length;
    if (this.#pending.length >= SEND_BATCH || this.#pendingBytes >= SEND_BATCH_BYTES) this.#send();
    else if (!this.#sendScheduled) {
      this.#sendScheduled = true;
      setImmediate(() => {
        this.#sendScheduled = false;
        this.#send();
      });
    }
    while (this.#count >= STORE_WINDOW || this.#bytes >= STORE_WINDOW_BYTES) {
      await new Promise<void>((resolve) => {
        this.#wakeAdder = resolve;
      });
    }
  }

  async settle(): Promise<void> {
    this.#send();
    await Promise.all(this.#inFlight);
    if (this.#failure !== null) throw this.#failure;
  }

  #send(): void {
    const batch = this.#pending;
    if (batch.length === 0) return;
    const bytes = this.#pendingBytes;
    this.#pending = [];
    this.#pendingBytes = 0;
    const settled = () => {
      this.#inFlight.delete(task);
      this.#count -= batch.length;
      this.#bytes -= bytes;
      this.#wakeAdder?.();
      this.#wakeAdder = null;
    };
    const task: Promise<void> = this.putBuffers(batch.map((item) => item.data)).then(
      (stored) => {
        for (const [i, item] of batch.entries()) item.blob.hash = stored[i]!.hash;
        settled();
      },
      (error: unknown) => {
        this.#failure ??= error;
        settled();
      },
    );
    this.#inFlight.add(task);
  }
}

async function* once(data: Uint8Array): AsyncGenerator<Uint8Array> {
  yield data;
}

async function receiveBlob(event: BlobEvent, storing: StoreWindow): Promise<ReceivedBlob> {
  // The git blob id needs the size first; the delimited form only knows it at its end, so it is
  // hashed after storing, from the store (rare: git fast-export never writes that form).
  const sha = createHash('sha1');
  if (event.size !== null) sha.update(`blob ${event.size}\0`);
  if (event.size !== null && event.size <= SMALL_BLOB) {
    // The bytes the parser had at hand (the store copies what it keeps), else gathered into one buffer.
    let data = event.bytes;
    if (data === undefined) {
      data = Buffer.allocUnsafe(event.size);
      let filled = 0;
      for await (const chunk of event.data) {
        data.set(chunk, filled);
        filled += chunk.length;
      }
    }
    sha.update(data);
    const maybeManifest = data.length >= MANIFEST_PREFIX.length && data.subarray(0, MANIFEST_PREFIX.length).equals(MANIFEST_PREFIX);
    const blob: ReceivedBlob = { hash: PENDING_HASH, size: data.length, gitId: sha.digest('hex'), maybeManifest };
    await storing.add(data, blob);
    return blob;
  }
  const storeBlob = storing.put;
  async function* tee(): AsyncGenerator<Uint8Array> {
    for await (const chunk of event.data) {
      if (event.size !== null) sha.update(chunk);
      yield chunk;
    }
  }
  const stored = await storeBlob(tee());
  if (event.size === null) throw unsupported('data <<delimiter blobs are not supported; use git fast-export');
  return { hash: stored.hash, size: stored.size, gitId: sha.digest('hex'), maybeManifest: true };
}

function toChange(change: CommitEvent['fileChanges'][number], blobsByMark: Map<number, ReceivedBlob>, inline: Map<number, ReceivedBlob>): ReceivedChange {
  switch (change.kind) {
    case 'modify': {
      if (change.mode !== '100644' && change.mode !== '100755' && change.mode !== '120000') {
        throw unsupported(`file mode ${change.mode} at ${change.path} (submodules and directories as blobs are not stored)`);
      }
      return {
        kind: 'modify',
        path: storablePath(change.path),
        executable: change.mode === '100755',
        symlink: change.mode === '120000',
        blob: blobOf(change.dataref, blobsByMark, inline),
      };
    }
    case 'delete':
      return { kind: 'delete', path: change.path };
    case 'rename':
      return { kind: 'rename', from: change.from, to: storablePath(change.to) };
    case 'copy':
      return { kind: 'copy', from: change.from, to: storablePath(change.to) };
    case 'deleteall':
      return { kind: 'deleteall' };
    default:
      throw unsupported('notes are not stored');
  }
}

/**
 * A path the push creates, exactly as the file API would store it. The message quotes the path with
 * every unsafe character escaped (a newline or U+202E must not break or reorder it) and names the problem; the path must also be stored
 * byte for byte as git has it (already NFC), or the project would export different commit ids.
 */
function storablePath(path: string): string {
  let normalized: string;
  try {
    normalized = normalizeProjectPath(path);
  } catch (error) {
    const reason = (error as StrataError).details?.['reason'] ?? 'invalid';
    throw new StrataError('INVALID_PATH', {
      message: `The push creates ${quoteSafely(path)}, a name Strata cannot store (${String(reason)}); rename it in git and push again`,
      details: { field: 'path', path: quoteSafely(path), reason },
      cause: error,
    });
  }
  if (normalized !== path) {
    throw new StrataError('INVALID_PATH', {
      message: `The push creates ${quoteSafely(path)}, which is not in Unicode NFC (Strata stores names in NFC); rename it in git and push again`,
      details: { field: 'path', path: quoteSafely(path), reason: 'not NFC' },
    });
  }
  return path;
}

function blobOf(ref: DataRef, blobsByMark: Map<number, ReceivedBlob>, inline: Map<number, ReceivedBlob>): ReceivedBlob | { oid: string } {
  if (ref.kind === 'oid') return { oid: ref.oid };
  const blob = ref.kind === 'mark' ? blobsByMark.get(ref.mark) : inline.get(ref.inlineIndex);
  if (blob === undefined) throw new StrataError('GIT_STREAM_INVALID', { message: 'A file change names a blob the stream did not send', details: { reason: 'unknown blob' } });
  return blob;
}

function utf8(bytes: Buffer): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw unsupported('a commit message is not UTF-8');
  }
}
