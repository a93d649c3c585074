// The git stream models against the real git binary (2.39 here): our fast-import writer feeds
// `git fast-import`, `git fast-export` feeds our parser, and a round trip goes through both.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StrataError } from '../engine/errors.js';
import type { BlobEvent, CommitEvent, CommitIsh, FastExportEvent, GitFileMode } from '../engine/git/fast-export-parser.js';
import { parseFastExport } from '../engine/git/fast-export-parser.js';
import { type ExportChange, type ExportCommit, type GitIdentity, writeFastImport } from '../engine/git/fast-import-writer.js';
import { hashBuffer } from '../engine/hash.js';

let root = '';
let dirCount = 0;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'strata-git-streams-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------------
// git as a child process: no system or user config (HOME is the temp dir), fixed identity.

const GIT_OPTIONS = ['-c', 'user.name=x', '-c', 'user.email=y', '-c', 'init.defaultBranch=main', '-c', 'gc.auto=0'];

function gitEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env['PATH'], HOME: root, GIT_CONFIG_NOSYSTEM: '1', TZ: 'UTC', LANG: 'C', ...extra };
}

function git(cwd: string, args: string[], options: { input?: Uint8Array | AsyncIterable<Uint8Array>; env?: Record<string, string> } = {}): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', [...GIT_OPTIONS, ...args], { cwd, env: gitEnv(options.env), stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolve(Buffer.concat(out));
      else reject(new Error(`git ${args.join(' ')} exited ${code ?? signal}: ${Buffer.concat(err).toString()}`));
    });
    const input = options.input;
    if (input === undefined) child.stdin.end();
    else if (input instanceof Uint8Array) child.stdin.end(input);
    else pipeline(Readable.from(input), child.stdin).catch(reject);
  });
}

/** git's stdout as it arrives; fails after the last chunk if git failed. */
async function* gitOutput(cwd: string, args: string[]): AsyncGenerator<Buffer> {
  const child = spawn('git', [...GIT_OPTIONS, ...args], { cwd, env: gitEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  const err: Buffer[] = [];
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  try {
    for await (const chunk of child.stdout) yield chunk as Buffer;
  } finally {
    if (child.exitCode === null) child.kill();
  }
  const code = await exit;
  if (code !== 0) throw new Error(`git ${args.join(' ')} exited ${code}: ${Buffer.concat(err).toString()}`);
}

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return Buffer.concat(parts);
}

async function* inChunks(bytes: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function newDir(name: string): Promise<string> {
  const dir = join(root, `${name}-${dirCount++}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

async function bareRepo(name: string): Promise<string> {
  const dir = await newDir(name);
  await git(dir, ['init', '-q', '--bare']);
  return dir;
}

const lines = (buffer: Buffer): string[] => buffer.toString('utf8').split('\n').filter((line) => line !== '');

function blobOid(content: Uint8Array): string {
  return createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');
}

/** `git ls-tree -r -z`: path → {mode, oid} */
async function lsTree(repo: string, commit: string): Promise<Map<string, { mode: string; oid: string }>> {
  const out = await git(repo, ['ls-tree', '-r', '-z', '--full-tree', commit]);
  const tree = new Map<string, { mode: string; oid: string }>();
  for (const entry of out.toString('utf8').split('\0')) {
    if (entry === '') continue;
    const [meta, path] = [entry.slice(0, entry.indexOf('\t')), entry.slice(entry.indexOf('\t') + 1)];
    const [mode, , oid] = meta.split(' ');
    tree.set(path, { mode: mode!, oid: oid! });
  }
  return tree;
}

/** A raw commit object: header lines and message bytes. */
async function catCommit(repo: string, commit: string): Promise<{ headers: string[]; message: Buffer }> {
  const raw = await git(repo, ['cat-file', 'commit', commit]);
  const split = raw.indexOf('\n\n');
  return { headers: raw.subarray(0, split).toString('utf8').split('\n'), message: raw.subarray(split + 2) };
}

// ---------------------------------------------------------------------------------------------------
// A chain of snapshots (what the engine will hand the writer) and the changes between them.

interface FileSpec {
  content: Buffer;
  executable?: boolean;
}
interface Snapshot {
  message: string;
  actor: GitIdentity;
  timeMs: number;
  tags: string[];
  files: Record<string, FileSpec>;
}

const T0 = Date.UTC(2026, 10, 22, 9, 0, 0) + 789; // milliseconds are dropped on export
const ALICE = { name: 'Alice Example', email: 'alice@example.com' };
const BOB = { name: 'Bob Ünicode', email: 'bob@example.com' };
const binary = Buffer.from(Array.from({ length: 1024 }, (_, i) => (i * 37 + (i >> 3)) & 255));
const large = Buffer.from(Array.from({ length: 300_000 }, (_, i) => 97 + ((i * 7919) % 26)));
const WEIRD = 'notes/a file, with spaces ü and "quotes".txt';
const text = (s: string) => Buffer.from(s, 'utf8');

const SNAPSHOTS: Snapshot[] = [
  {
    message: 'first snapshot',
    actor: ALICE,
    timeMs: T0,
    tags: ['v1'],
    files: {
      'README.md': { content: text('# Thesis\n') },
      'src/run.sh': { content: text('#!/bin/sh\necho run\n'), executable: true },
      'data/table.bin': { content: binary },
      'data/large.txt': { content: large },
      [WEIRD]: { content: text('weird\n') },
      '"leading quote.txt': { content: text('quoted\n') },
      'line\nbreak and\ttab.txt': { content: text('control characters in a name\n') },
      'dir/inner.m': { content: text('x = 1;\n') },
      'empty.txt': { content: Buffer.alloc(0) },
    },
  },
  {
    message: 'second\n\nwith a body and a trailing newline\n',
    actor: BOB,
    timeMs: T0 + 61_000,
    tags: [],
    files: {
      'README.md': { content: text('# Thesis\n\nChapter 1\n') },
      'src/run.sh': { content: text('#!/bin/sh\necho run\n') }, // exec bit removed
      'data/table.bin': { content: binary },
      'data/large.txt': { content: large },
      [WEIRD]: { content: text('weird\n') },
      '"leading quote.txt': { content: text('quoted\n') },
      'line\nbreak and\ttab.txt': { content: text('control characters in a name\n') },
      dir: { content: text('dir is a file now\n') }, // was a directory
      'empty.txt': { content: Buffer.alloc(0) },
    },
  },
  {
    message: '',
    actor: ALICE,
    timeMs: T0 + 3_600_000,
    tags: ['v2', 'release-1.0'],
    files: {
      'README.md': { content: text('# Thesis\n\nChapter 1\n') },
      'src/run.sh': { content: text('#!/bin/sh\necho run\n'), executable: true },
      'data/table.bin': { content: binary },
      'données/é.txt': { content: text('# Thesis\n\nChapter 1\n') }, // same content as README.md
      'empty.txt': { content: Buffer.alloc(0) },
      dir: { content: text('dir is a file now\n') },
    },
  },
  {
    message: 'no change: an identical tree',
    actor: { name: 'Eve <evil>\n', email: 'eve>@example.com\n' },
    timeMs: T0 + 7_200_000,
    tags: [],
    files: {},
  },
  {
    message: 'dir is a directory again',
    actor: BOB,
    timeMs: T0 + 86_400_000,
    tags: ['v3'],
    files: {},
  },
];
SNAPSHOTS[3]!.files = SNAPSHOTS[2]!.files;
SNAPSHOTS[4]!.files = { ...SNAPSHOTS[2]!.files, 'dir/b.py': { content: text('print(1)\n') } };
delete SNAPSHOTS[4]!.files['dir'];

const CONTENT = new Map<string, Buffer>();
for (const snapshot of SNAPSHOTS) for (const file of Object.values(snapshot.files)) CONTENT.set(hashBuffer(file.content), file.content);

/** Content served in 100 KB pieces (the large file goes through the no-copy path). */
async function* openContent(hash: string): AsyncGenerator<Buffer> {
  const content = CONTENT.get(hash);
  if (content === undefined) throw new Error(`no content ${hash}`);
  for (let i = 0; i < content.length; i += 100_000) yield content.subarray(i, i + 100_000);
}

function changesBetween(previous: Record<string, FileSpec> | null, next: Record<string, FileSpec>): ExportChange[] {
  const changes: ExportChange[] = [];
  for (const [path, file] of Object.entries(next)) {
    const before = previous?.[path];
    const contentHash = hashBuffer(file.content);
    const executable = file.executable === true;
    if (before === undefined || hashBuffer(before.content) !== contentHash || (before.executable === true) !== executable) {
      changes.push({ kind: 'modify', path, contentHash, size: file.content.length, executable });
    }
  }
  for (const path of Object.keys(previous ?? {})) if (!(path in next)) changes.push({ kind: 'delete', path });
  return changes;
}

function chain(from = 0, to = SNAPSHOTS.length, reverseChanges = false): ExportCommit[] {
  const commits: ExportCommit[] = [];
  for (let i = from; i < to; i++) {
    const snapshot = SNAPSHOTS[i]!;
    const changes = changesBetween(i === 0 ? null : SNAPSHOTS[i - 1]!.files, snapshot.files);
    if (reverseChanges) changes.reverse();
    commits.push({ message: snapshot.message, actor: snapshot.actor, timeMs: snapshot.timeMs, tags: snapshot.tags, changes });
  }
  return commits;
}

async function* lazily<T>(items: T[]): AsyncGenerator<T> {
  for (const item of items) yield item;
}

async function importChain(repo: string, commits: ExportCommit[], parentCommitId?: string): Promise<string[]> {
  await git(repo, ['fast-import', '--quiet'], { input: writeFastImport(lazily(commits), { openContent, ...(parentCommitId ? { parentCommitId } : {}) }) });
  return lines(await git(repo, ['rev-list', '--reverse', 'refs/heads/main']));
}

// ---------------------------------------------------------------------------------------------------

describe('fast-import writer', () => {
  let repo = '';
  let ids: string[] = [];

  beforeAll(async () => {
    repo = await bareRepo('writer');
    ids = await importChain(repo, chain());
  });

  it('makes one commit per snapshot on refs/heads/main, linear, and git fsck --strict is clean', async () => {
    expect(ids).toHaveLength(SNAPSHOTS.length);
    await git(repo, ['fsck', '--strict', '--no-dangling']);
    const parents = lines(await git(repo, ['log', '--format=%H %P', 'refs/heads/main'])).map((line) => line.trim()).reverse();
    expect(parents[0]).toBe(ids[0]);
    for (let i = 1; i < ids.length; i++) expect(parents[i]).toBe(`${ids[i]} ${ids[i - 1]}`);
    expect(lines(await git(repo, ['for-each-ref', '--format=%(refname)']))).toEqual(['refs/heads/main', 'refs/tags/release-1.0', 'refs/tags/v1', 'refs/tags/v2', 'refs/tags/v3']);
  });

  it('stores every snapshot as a full tree: paths, exec bits and bytes', async () => {
    for (const [i, snapshot] of SNAPSHOTS.entries()) {
      const tree = await lsTree(repo, ids[i]!);
      expect([...tree.keys()].sort()).toEqual(Object.keys(snapshot.files).sort());
      for (const [path, file] of Object.entries(snapshot.files)) {
        expect(tree.get(path)).toEqual({ mode: file.executable ? '100755' : '100644', oid: blobOid(file.content) });
        expect((await git(repo, ['show', `${ids[i]}:${path}`])).equals(file.content)).toBe(true);
      }
    }
  });

  it('writes the actor and the UTC time as author and committer, and the message bytes exactly', async () => {
    for (const [i, snapshot] of SNAPSHOTS.entries()) {
      const { headers, message } = await catCommit(repo, ids[i]!);
      const name = i === 3 ? 'Eve evil' : snapshot.actor.name; // `<`, `>` and line breaks are dropped
      const email = i === 3 ? 'eve@example.com' : snapshot.actor.email;
      const ident = `${name} <${email}> ${Math.floor(snapshot.timeMs / 1000)} +0000`;
      expect(headers.filter((h) => !h.startsWith('tree ') && !h.startsWith('parent '))).toEqual([`author ${ident}`, `committer ${ident}`]);
      expect(message.equals(text(snapshot.message))).toBe(true);
    }
  });

  it('turns snapshot tags into lightweight tags on the right commits', async () => {
    const expected: Record<string, number> = { v1: 0, v2: 2, 'release-1.0': 2, v3: 4 };
    for (const [tag, index] of Object.entries(expected)) {
      expect((await git(repo, ['cat-file', '-t', `refs/tags/${tag}`])).toString().trim()).toBe('commit');
      expect((await git(repo, ['rev-parse', `refs/tags/${tag}`])).toString().trim()).toBe(ids[index]);
    }
  });

  it('is deterministic: the same chain gives the same bytes and commit ids, whatever the order of the changes', async () => {
    const first = await collect(writeFastImport(chain(), { openContent }));
    const second = await collect(writeFastImport(lazily(chain(0, SNAPSHOTS.length, true)), { openContent, chunkBytes: 1000 }));
    expect(second.equals(first)).toBe(true);
    expect(first.subarray(0, 13).toString()).toBe('feature done\n');
    expect(first.subarray(-5).toString()).toBe('done\n');
    const again = await bareRepo('writer-again');
    expect(await importChain(again, chain(0, SNAPSHOTS.length, true))).toEqual(ids);
  });

  it('exports an older snapshot as a prefix of the newer export, and continues it incrementally with the same ids', async () => {
    const partial = await bareRepo('writer-prefix');
    const prefixIds = await importChain(partial, chain(0, 3));
    expect(prefixIds).toEqual(ids.slice(0, 3));
    // The rest, continuing from the last commit already in git (changes relative to snapshot 3)
    const continued = await importChain(partial, chain(3), prefixIds[2]);
    expect(continued).toEqual(ids);
    expect((await git(partial, ['rev-parse', 'refs/tags/v3'])).toString().trim()).toBe(ids[4]);
    await git(partial, ['fsck', '--strict', '--no-dangling']);
  });

  it('yields chunks of at most chunkBytes, except large content passed on as it came', async () => {
    const sizes: number[] = [];
    for await (const chunk of writeFastImport(chain(), { openContent })) sizes.push(chunk.length);
    expect(sizes.every((size) => size <= 100_000)).toBe(true);
    expect(sizes.filter((size) => size === 100_000)).toHaveLength(3); // large.txt's three full pieces
    expect(sizes.filter((size) => size > 65_536 && size !== 100_000)).toEqual([]);
  });

  it('fails with CONTENT_CORRUPT when content does not have the recorded size, before writing past it', async () => {
    for (const actual of [text('short'), text('much too long for the record')]) {
      const commits = [{ message: 'm', actor: ALICE, timeMs: T0, tags: [], changes: [{ kind: 'modify' as const, path: 'a', contentHash: 'h', size: 10, executable: false }] }];
      const error = await collect(writeFastImport(commits, { openContent: () => [actual] })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StrataError);
      expect(error).toMatchObject({ code: 'CONTENT_CORRUPT', details: { hash: 'h', path: 'a', expected: 10 } });
    }
  });

  it('refuses caller mistakes with a TypeError', async () => {
    const change = { kind: 'modify' as const, path: 'a', contentHash: 'h', size: 0, executable: false };
    const bad: Array<[Partial<ExportCommit>, object]> = [
      [{ changes: [change, { kind: 'delete', path: 'a' }] }, {}],
      [{ changes: [{ ...change, path: '/abs' }] }, {}],
      [{ changes: [{ ...change, size: -1 }] }, {}],
      [{ tags: ['bad tag'] }, {}],
      [{ tags: ['a..b'] }, {}],
      [{ timeMs: -1 }, {}],
      [{}, { parentCommitId: 'abc' }],
    ];
    for (const [override, options] of bad) {
      const commit: ExportCommit = { message: '', actor: ALICE, timeMs: T0, tags: [], changes: [change], ...override };
      const error = await collect(writeFastImport([commit], { openContent: () => [], ...options })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TypeError);
    }
  });
});

// ---------------------------------------------------------------------------------------------------
// Replaying parsed events into trees, as an importer would.

interface Tree {
  [path: string]: { mode: GitFileMode; oid: string };
}
interface ReplayedCommit {
  event: CommitEvent;
  tree: Tree;
}
interface BlobSummary {
  mark: number | null;
  originalOid: string | null;
  size: number | null;
  inlineIndex: number | null;
}
interface Replay {
  commits: ReplayedCommit[];
  blobs: BlobSummary[];
  /** `:mark` or `inline:<index>` → git blob id of the bytes received */
  blobOids: Map<string, string>;
  /** the same keys → the bytes (test data is small) */
  blobBytes: Map<string, Buffer>;
  tags: FastExportEvent[];
  resets: Array<{ ref: string; from: CommitIsh | null }>;
  /** where each ref points at the end: git fast-export writes a commit under the first ref it walks it
   * for (often a tag), and a branch may get its tip from a later `reset ... from` */
  refs: Map<string, number | null>;
  other: FastExportEvent[];
}

/** Applies the events as an importer would: branch tips, `from`, file changes; blob bytes by key. */
async function replay(events: AsyncIterable<FastExportEvent>): Promise<Replay> {
  const result: Replay = { commits: [], blobs: [], blobOids: new Map(), blobBytes: new Map(), tags: [], resets: [], refs: new Map(), other: [] };
  const treesByMark = new Map<number, Tree>();
  const tips = new Map<string, Tree | null>();
  const treeOf = (commitIsh: CommitIsh | null): Tree => {
    if (commitIsh === null) return {};
    if (commitIsh.kind !== 'mark') throw new Error(`unexpected ${JSON.stringify(commitIsh)}`);
    return treesByMark.get(commitIsh.mark)!;
  };
  for await (const event of events) {
    if (event.type === 'blob') {
      const bytes = await collect(event.data);
      if (event.size !== null) expect(bytes.length).toBe(event.size);
      if (event.bytes !== undefined) expect(event.bytes.equals(bytes)).toBe(true);
      const key = event.inlineIndex === null ? `:${event.mark}` : `inline:${event.inlineIndex}`;
      result.blobOids.set(key, blobOid(bytes));
      result.blobBytes.set(key, bytes);
      result.blobs.push({ mark: event.mark, originalOid: event.originalOid, size: event.size, inlineIndex: event.inlineIndex });
    } else if (event.type === 'commit') {
      const base = event.from !== null ? treeOf(event.from) : (tips.get(event.ref) ?? {});
      const tree: Tree = { ...base };
      for (const change of event.fileChanges) {
        if (change.kind === 'modify') {
          const ref = change.dataref;
          const key = ref.kind === 'mark' ? `:${ref.mark}` : ref.kind === 'inline' ? `inline:${ref.inlineIndex}` : ref.oid;
          tree[change.path] = { mode: change.mode, oid: result.blobOids.get(key) ?? key };
        } else if (change.kind === 'delete') {
          delete tree[change.path];
        } else if (change.kind === 'rename' || change.kind === 'copy') {
          tree[change.to] = tree[change.from]!;
          if (change.kind === 'rename') delete tree[change.from];
        } else if (change.kind === 'deleteall') {
          for (const path of Object.keys(tree)) delete tree[path];
        }
      }
      if (event.mark !== null) treesByMark.set(event.mark, tree);
      tips.set(event.ref, tree);
      result.refs.set(event.ref, event.mark);
      result.commits.push({ event, tree });
    } else if (event.type === 'tag') {
      result.tags.push(event);
    } else if (event.type === 'reset') {
      result.resets.push({ ref: event.ref, from: event.from });
      tips.set(event.ref, event.from === null ? null : treeOf(event.from));
      result.refs.set(event.ref, event.from === null ? null : (event.from as { mark: number }).mark);
    } else {
      result.other.push(event);
    }
  }
  return result;
}

async function drain(events: AsyncIterable<FastExportEvent>): Promise<number> {
  let count = 0;
  for await (const event of events) {
    count++;
    if (event.type === 'blob') for await (const _ of event.data);
  }
  return count;
}

async function parseError(input: AsyncIterable<Uint8Array>, options = {}): Promise<unknown> {
  try {
    await drain(parseFastExport(input, options));
  } catch (error) {
    return error;
  }
  return null;
}

function commitIshOf(value: CommitIsh | null): string {
  return value === null ? 'none' : value.kind === 'mark' ? `:${value.mark}` : value.kind === 'oid' ? value.oid : value.ref;
}

// ---------------------------------------------------------------------------------------------------

describe('fast-export parser', () => {
  let work = '';
  const EXPORT_A = ['fast-export', '--all', '--reencode=yes', '--signed-tags=strip', '--show-original-ids', '--use-done-feature'];
  let rawA: Buffer = Buffer.alloc(0);
  let a: Replay;

  beforeAll(async () => {
    work = await newDir('parser-work');
    await git(work, ['init', '-q']);
    let clock = 1_790_000_000;
    const commit = async (message: string, extra: string[] = []) => {
      clock += 60;
      await writeFile(join(root, 'msg'), message);
      await git(work, [...extra, 'commit', '-q', '-F', join(root, 'msg')], { env: { GIT_AUTHOR_DATE: `${clock} +0100`, GIT_COMMITTER_DATE: `${clock + 7} -0230` } });
    };
    await writeFile(join(work, 'a.txt'), 'alpha\n');
    await writeFile(join(work, 'bin.dat'), binary);
    await mkdir(join(work, 'sp ace'));
    await writeFile(join(work, 'sp ace', 'ü "q".txt'), 'unicode\n');
    await writeFile(join(work, 'script.sh'), '#!/bin/sh\n');
    await git(work, ['add', '-A']);
    await commit('first\n');
    await git(work, ['mv', 'a.txt', 'renamed.txt']);
    await writeFile(join(work, 'sp ace', 'ü "q".txt'), 'unicode\nmore\n');
    await git(work, ['add', '-A']);
    await commit('second\n\nwith a body\n');
    await git(work, ['tag', '-a', 'v1', '-m', 'release one'], { env: { GIT_COMMITTER_DATE: `${clock + 30} +0000` } });
    await git(work, ['rm', '-q', 'bin.dat']);
    await chmod(join(work, 'script.sh'), 0o755);
    await git(work, ['add', '-A']);
    await commit('third: delete and exec bit\n');
    await git(work, ['tag', 'light']);
    await writeFile(join(work, 'renamed.txt'), 'alpha\nlatin\n');
    await git(work, ['add', '-A']);
    await writeFile(join(root, 'latin1'), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a])); // "café\n" in ISO-8859-1
    clock += 60;
    await git(work, ['-c', 'i18n.commitEncoding=ISO-8859-1', 'commit', '-q', '-F', join(root, 'latin1')], { env: { GIT_AUTHOR_DATE: `${clock} +0000`, GIT_COMMITTER_DATE: `${clock} +0000` } });
    const first = lines(await git(work, ['rev-list', '--reverse', 'HEAD']))[0]!;
    await git(work, ['checkout', '-q', '-b', 'side', first]);
    await writeFile(join(work, 'side.txt'), 'side\n');
    await git(work, ['add', '-A']);
    await commit('side work\n');
    await git(work, ['checkout', '-q', '-b', 'merged', 'main']);
    await git(work, ['merge', '-q', '--no-ff', 'side', '-m', 'merge side'], { env: { GIT_AUTHOR_DATE: `${clock + 600} +0000`, GIT_COMMITTER_DATE: `${clock + 600} +0000` } });
    await git(work, ['checkout', '-q', 'main']);
    rawA = await collect(gitOutput(work, EXPORT_A));
    a = await replay(parseFastExport(gitOutput(work, EXPORT_A)));
  });

  it('reports every commit with its identities, message bytes, parents and the tree git has', async () => {
    const all = lines(await git(work, ['rev-list', '--all']));
    expect(a.commits.map((c) => c.event.originalOid).sort()).toEqual([...all].sort());
    for (const { event, tree } of a.commits) {
      const oid = event.originalOid!;
      const { headers, message } = await catCommit(work, oid);
      const ident = (kind: string) => {
        const g = event[kind as 'author' | 'committer']!;
        return `${kind} ${g.name} <${g.email}> ${g.timeSec} ${g.tz}`;
      };
      expect(headers).toContain(ident('author'));
      expect(headers).toContain(ident('committer'));
      if (headers.includes('encoding ISO-8859-1')) {
        expect(event.message.toString('utf8')).toBe('café\n'); // --reencode=yes
        expect(event.encoding).toBeNull();
      } else {
        expect(event.message.equals(message)).toBe(true);
      }
      const parents = headers.filter((h) => h.startsWith('parent ')).map((h) => h.slice(7));
      const markOf = (p: string) => `:${a.commits.find((c) => c.event.originalOid === p)!.event.mark}`;
      expect(commitIshOf(event.from)).toBe(parents.length === 0 ? 'none' : markOf(parents[0]!));
      expect(event.merges.map(commitIshOf)).toEqual(parents.slice(1).map(markOf));
      const expected = Object.fromEntries([...(await lsTree(work, oid))].map(([path, entry]) => [path, entry]));
      expect(tree).toEqual(expected);
    }
    const author = a.commits.find((c) => c.event.message.toString() === 'first\n')!.event.author!;
    expect(author).toEqual({ name: 'x', email: 'y', timeSec: 1_790_000_060, tz: '+0100' });
  });

  it('reports the merge as a commit with a merge parent, and the exec bit change, delete and binary blob', async () => {
    const merge = a.commits.filter((c) => c.event.merges.length > 0);
    expect(merge).toHaveLength(1);
    expect(merge[0]!.event.originalOid).toBe((await git(work, ['rev-parse', 'merged'])).toString().trim());
    const third = a.commits.find((c) => c.event.message.toString().startsWith('third'))!.event;
    expect(third.fileChanges).toEqual(expect.arrayContaining([{ kind: 'delete', path: 'bin.dat' }, expect.objectContaining({ kind: 'modify', mode: '100755', path: 'script.sh' })]));
    const binBlob = a.blobs.find((b) => b.originalOid === blobOid(binary))!;
    expect(a.blobBytes.get(`:${binBlob.mark}`)!.equals(binary)).toBe(true);
    for (const blob of a.blobs) expect(a.blobOids.get(`:${blob.mark}`)).toBe(blob.originalOid);
  });

  it('reports annotated tags, lightweight tags (as resets), features and done', async () => {
    expect(a.tags).toHaveLength(1);
    const tag = a.tags[0]!;
    if (tag.type !== 'tag') throw new Error('not a tag');
    expect(tag).toMatchObject({ name: 'v1', tagger: { name: 'x', email: 'y' } });
    expect(tag.message.toString()).toBe('release one\n');
    expect(a.commits.find((c) => c.event.mark === (tag.from as { mark: number }).mark)!.event.originalOid).toBe((await git(work, ['rev-parse', 'v1^{commit}'])).toString().trim());
    const light = a.refs.get('refs/tags/light');
    expect(a.commits.find((c) => c.event.mark === light)!.event.originalOid).toBe((await git(work, ['rev-parse', 'light'])).toString().trim());
    expect(a.other).toEqual([{ type: 'feature', name: 'done', value: null }, { type: 'done' }]);
  });

  it('reads the other export options alike: renames and copies (-M -C), encoding kept (--reencode=no)', async () => {
    const b = await replay(parseFastExport(gitOutput(work, ['fast-export', '--all', '--reencode=no', '-M', '-C'])));
    expect(b.commits.map((c) => c.tree)).toEqual(a.commits.map((c) => c.tree));
    expect(b.commits.flatMap((c) => c.event.fileChanges)).toContainEqual({ kind: 'rename', from: 'a.txt', to: 'renamed.txt' });
    const latin = b.commits.find((c) => c.event.encoding !== null)!.event;
    expect(latin.encoding).toBe('ISO-8859-1');
    expect(latin.message.equals(Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]))).toBe(true);
    const c = await replay(parseFastExport(gitOutput(work, ['fast-export', '--all', '--reencode=yes', '--signed-tags=strip'])));
    const strip = (r: Replay) => r.commits.map(({ event, tree }) => ({ ...event, originalOid: null, tree }));
    expect(strip(c)).toEqual(strip(a));
  });

  it('gives the same events however the input is split into chunks', async () => {
    const normal = (r: Replay) => JSON.stringify([r.commits, r.blobs.map((b) => ({ ...b, data: null })), [...r.blobOids], r.tags, r.resets, r.other]);
    const whole = normal(await replay(parseFastExport(inChunks(rawA, rawA.length))));
    for (const size of [1, 7, 4096]) expect(normal(await replay(parseFastExport(inChunks(rawA, size))))).toBe(whole);
    // Blobs whole in the chunk at hand are read without waiting (`bytes` set); split ones the long way.
    const held = async (size: number) => {
      let n = 0;
      for await (const event of parseFastExport(inChunks(rawA, size))) if (event.type === 'blob' && event.bytes !== undefined) n++;
      return n;
    };
    expect(await held(rawA.length)).toBeGreaterThan(0);
    expect(await held(1)).toBe(0);
  });

  it('rejects a truncated stream with GIT_STREAM_INVALID wherever it is cut', async () => {
    const step = Math.max(1, Math.floor(rawA.length / 300));
    const cuts = new Set<number>();
    for (let cut = 1; cut < rawA.length; cut += step) cuts.add(cut);
    for (let back = 1; back <= 8; back++) cuts.add(rawA.length - back);
    for (const cut of cuts) {
      const error = await parseError(inChunks(rawA.subarray(0, cut), 997));
      expect(error, `cut at ${cut}`).toBeInstanceOf(StrataError);
      expect((error as StrataError).code).toBe('GIT_STREAM_INVALID');
      expect((error as StrataError).message).toMatch(/^Invalid git fast-import stream at byte \d+: /);
    }
    expect(await parseError(inChunks(rawA, 997))).toBeNull();
  });

  it('rejects garbled streams with a coded error naming the reason', async () => {
    const head = 'blob\nmark :1\ndata 3\nabc\n';
    const commit = (body: string) => `${head}commit refs/heads/main\nmark :2\ncommitter A <a@b> 1 +0000\ndata 2\nhi\n${body}\n`;
    const bad: Array<[string, RegExp, object?]> = [
      ['frobnicate\n', /unknown or unsupported command/],
      ['ls "a"\n', /unknown or unsupported command/],
      ['cat-blob :1\n', /unknown or unsupported command/],
      ['blob\nmark :1\ndata abc\nabc\n', /data length is not a number/],
      ['blob\nmark :1\ndata 10\nabc\n', /ends 6 bytes before/],
      ['blob\nmark :0\ndata 0\n', /expected a mark/],
      ['blob\nmark 1\ndata 0\n', /expected a mark/],
      ['blob\nmark :1\n', /input ends where data was expected/],
      ['blob\nmark :1\ndata <<EOF\nabc\n', /ends before the data delimiter/],
      ['commit refs/heads/main\nmark :2\ndata 0\n', /expected committer/],
      ['commit refs/heads/main\ncommitter A a@b 1 +0000\ndata 0\n', /needs <email>/],
      ['commit refs/heads/main\ncommitter A<a@b> 1 +0000\ndata 0\n', /space before <email>/],
      ['commit refs/heads/main\ncommitter A <a@b 1 +0000\ndata 0\n', /closed by >/],
      ['commit refs/heads/main\ncommitter A <a@b> yesterday\ndata 0\n', /raw date/],
      ['commit refs/heads/main\ncommitter A <a@b> 1 +0000\nfrom :1\n', /expected a data command/],
      [commit('M 100645 :1 a'), /unknown file mode/],
      [commit('M 100644 :1'), /expected M <mode> <dataref> <path>/],
      [commit('M 100644 abc a'), /expected a data reference/],
      [commit('M 100644 :1 "unterminated'), /badly quoted path/],
      [commit('M 100644 :1 "bad\\qescape"'), /badly quoted path/],
      [commit('M 100644 :1 "a" trailing'), /badly quoted path/],
      [commit('R onlyone'), /expected two paths/],
      [commit('M 100644 inline a\nblob'), /expected a data command/],
      [`${head}commit \n`, /needs an argument/],
      ['feature frobs\n', /unknown feature/],
      ['feature date-format=rfc2822\n', /only the raw date format/],
      ['feature done\nblob\ndata 0\n', /without the `done`/],
      ['tag v1\ndata 0\n', /expected from/],
      ['reset refs/heads/x\nfrom a b\n', /expected a mark, an object id or a ref/],
      ['alias\nmark :1\nfrom :2\n', /expected to/],
      [`progress ${'x'.repeat(100)}\n`, /line is longer than 64 bytes/, { maxLineBytes: 64 }],
      ['commit refs/heads/main\ncommitter A <a@b> 1 +0000\ndata 100\n', /larger than the limit of 10/, { maxMessageBytes: 10 }],
    ];
    for (const [input, reason, options] of bad) {
      const error = await parseError(inChunks(Buffer.from(input), 5), options);
      expect(error, input).toBeInstanceOf(StrataError);
      expect((error as StrataError).code, input).toBe('GIT_STREAM_INVALID');
      expect((error as StrataError).message, input).toMatch(reason);
      expect((error as StrataError).details, input).toMatchObject({ reason: expect.any(String), offset: expect.any(Number) });
    }
    // A path in ISO-8859-1 ("caf\xe9"): valid for git, not a Strata path.
    const latin1Path = Buffer.concat([Buffer.from(commit('M 100644 :1 caf').slice(0, -1)), Buffer.from([0xe9, 0x0a])]);
    const utf8Error = await parseError(inChunks(latin1Path, 64));
    expect(utf8Error).toMatchObject({ code: 'INVALID_UTF8', details: { field: 'path' } });
  });

  it('reads the delimited data form, inline data, comments, C/R with quoted paths, deleteall and notes', async () => {
    const stream = [
      '# a comment',
      'feature done',
      'option git quiet',
      'blob',
      'mark :1',
      'data <<EOF',
      'line one',
      'EOFX is not the end',
      'EOF',
      '',
      'commit refs/heads/main',
      'mark :2',
      'author A <a@b> 10 -0100',
      'committer C <c@d> 20 +0200',
      'encoding UTF-8',
      'data <<END',
      'message',
      'END',
      'M 644 :1 "qu\\"ote\\n\\303\\251"',
      'M 755 inline run.sh',
      'data 3',
      'hi',
      '# comment between changes',
      'C "qu\\"ote\\n\\303\\251" copy of it',
      'R run.sh "bin/run me.sh"',
      'N inline :2',
      'data 4',
      'note',
      '',
      'commit refs/heads/main',
      'committer C <c@d> 30 +0000',
      'data 0',
      'deleteall',
      'M 120000 0123456789abcdef0123456789abcdef01234567 link',
      'checkpoint',
      'progress half way',
      'alias',
      'mark :9',
      'to :2',
      'done',
      'ignored after done',
    ].join('\n');
    const events: FastExportEvent[] = [];
    const data: string[] = [];
    for await (const event of parseFastExport(inChunks(Buffer.from(stream), 3))) {
      events.push(event);
      if (event.type === 'blob') data.push((await collect(event.data)).toString());
    }
    expect(data).toEqual(['line one\nEOFX is not the end\n', 'hi\n', 'note']);
    expect(events.map((e) => e.type)).toEqual(['feature', 'option', 'blob', 'blob', 'blob', 'commit', 'commit', 'checkpoint', 'progress', 'alias', 'done']);
    const [first, second] = events.filter((e): e is CommitEvent => e.type === 'commit');
    expect(first).toMatchObject({
      mark: 2,
      author: { name: 'A', email: 'a@b', timeSec: 10, tz: '-0100' },
      committer: { name: 'C', email: 'c@d', timeSec: 20, tz: '+0200' },
      encoding: 'UTF-8',
      from: null,
      fileChanges: [
        { kind: 'modify', mode: '100644', dataref: { kind: 'mark', mark: 1 }, path: 'qu"ote\né' },
        { kind: 'modify', mode: '100755', dataref: { kind: 'inline', inlineIndex: 0 }, path: 'run.sh' },
        { kind: 'copy', from: 'qu"ote\né', to: 'copy of it' },
        { kind: 'rename', from: 'run.sh', to: 'bin/run me.sh' },
        { kind: 'note', dataref: { kind: 'inline', inlineIndex: 1 }, commit: { kind: 'mark', mark: 2 } },
      ],
    });
    expect(first!.message.toString()).toBe('message\n');
    expect(events.filter((e) => e.type === 'blob').map((e) => (e as BlobEvent).inlineIndex)).toEqual([null, 0, 1]);
    expect(second).toMatchObject({ author: null, fileChanges: [{ kind: 'deleteall' }, { kind: 'modify', mode: '120000', dataref: { kind: 'oid', oid: '0123456789abcdef0123456789abcdef01234567' }, path: 'link' }] });
    expect(events.at(-2)).toEqual({ type: 'alias', mark: 9, to: { kind: 'mark', mark: 2 } });
  });

  it('skips blob data the consumer leaves unread, and refuses reads after moving on', async () => {
    const stream = Buffer.from('blob\nmark :1\ndata 5\nhello\nblob\nmark :2\ndata 5\nworld\n');
    const marks: number[] = [];
    let kept: BlobEvent | null = null;
    for await (const event of parseFastExport(inChunks(stream, 2))) {
      if (event.type !== 'blob') continue;
      marks.push(event.mark!);
      kept ??= event;
    }
    expect(marks).toEqual([1, 2]);
    await expect(collect(kept!.data)).rejects.toThrow(TypeError);
  });

  it('streams a 20 MB blob through in pieces, without holding it whole', async () => {
    const big = await newDir('parser-big');
    await git(big, ['init', '-q']);
    const content = Buffer.alloc(20 * 1024 * 1024);
    for (let i = 0, x = 1; i < content.length; i += 4) {
      x = (Math.imul(x, 1_103_515_245) + 12_345) | 0;
      content.writeInt32LE(x, i);
    }
    await writeFile(join(big, 'big.bin'), content);
    await git(big, ['add', 'big.bin']);
    await git(big, ['commit', '-q', '-m', 'big']);
    let chunks = 0;
    let largest = 0;
    let size = 0;
    const hash = createHash('sha1');
    for await (const event of parseFastExport(gitOutput(big, ['fast-export', '--all']))) {
      if (event.type !== 'blob') continue;
      expect(event.size).toBe(content.length);
      hash.update(`blob ${event.size}\0`);
      for await (const chunk of event.data) {
        chunks++;
        largest = Math.max(largest, chunk.length);
        size += chunk.length;
        hash.update(chunk);
      }
    }
    expect(size).toBe(content.length);
    expect(hash.digest('hex')).toBe(blobOid(content));
    // Pipe reads are 64 KiB: the blob arrives as hundreds of views into the input chunks.
    expect(chunks).toBeGreaterThan(100);
    expect(largest).toBeLessThanOrEqual(1024 * 1024);
  });
});

describe('round trip', () => {
  it('writer → git fast-import → git fast-export → parser reproduces the chain', async () => {
    const repo = await bareRepo('round-trip');
    const ids = await importChain(repo, chain());
    const r = await replay(parseFastExport(gitOutput(repo, ['fast-export', '--all', '--use-done-feature', '--show-original-ids'])));
    // Follow main's tip back through `from`: commits may be written under a tag's ref (see Replay.refs).
    const byMark = new Map(r.commits.map((c) => [c.event.mark, c]));
    const main: ReplayedCommit[] = [];
    for (let at = byMark.get(r.refs.get('refs/heads/main')!); at !== undefined; at = at.event.from === null ? undefined : byMark.get((at.event.from as { mark: number }).mark)) main.unshift(at);
    expect(main.map((c) => c.event.originalOid)).toEqual(ids);
    const blobsByOid = new Map([...r.blobBytes].map(([key, bytes]) => [r.blobOids.get(key)!, bytes]));
    for (const [i, { event, tree }] of main.entries()) {
      const snapshot = SNAPSHOTS[i]!;
      expect(event.message.equals(text(snapshot.message))).toBe(true);
      const name = i === 3 ? 'Eve evil' : snapshot.actor.name;
      const email = i === 3 ? 'eve@example.com' : snapshot.actor.email;
      const ident = { name, email, timeSec: Math.floor(snapshot.timeMs / 1000), tz: '+0000' };
      expect(event.author).toEqual(ident);
      expect(event.committer).toEqual(ident);
      expect(event.merges).toEqual([]);
      expect(Object.keys(tree).sort()).toEqual(Object.keys(snapshot.files).sort());
      for (const [path, file] of Object.entries(snapshot.files)) {
        expect(tree[path]!.mode).toBe(file.executable ? '100755' : '100644');
        expect(blobsByOid.get(tree[path]!.oid)!.equals(file.content)).toBe(true);
      }
    }
    const tagged = Object.fromEntries([...r.refs].filter(([ref]) => ref.startsWith('refs/tags/')).map(([ref, mark]) => [ref.slice(10), main.findIndex((c) => c.event.mark === mark)]));
    expect(tagged).toEqual({ v1: 0, v2: 2, 'release-1.0': 2, v3: 4 });
  });
});
