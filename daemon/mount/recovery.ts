// After a crash: staging files a dead mount process had closed (or fsynced) but not yet versioned
// carry a journal record `<file>.json` naming their project path. They are versioned now, before the
// mount serves again, so a kill -9 in the settle window loses no closed file. A staging file still
// being written when the process died has a record marked `open` (written when it started): its bytes
// are kept as a version whose actor says it was recovered after a crash, never thrown away (so are a
// small file's bytes the log holds from an fsync mid-write, ops-open.ts). Staging
// files without any record and records without a file are removed.
import { open, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { StrataError } from '../../engine/errors.js';
import { isContentHash } from '../../engine/hash.js';
import type { ContentStore } from '../../engine/ports/content-store.js';
import type { ContentHash } from '../../engine/types.js';
import { contentSpans, openSpans } from './content-reader.js';
import { JOURNAL_NAME, readJournal } from './journal.js';
import type { MountSink, SinkContent } from './sink.js';

const STAGING_NAME = /^(\d+)-[0-9a-f-]+\.stg$/;

/** Appended to the actor's name on versions of files that were still open at a crash (history shows it). */
export const RECOVERED_ACTOR_SUFFIX = ' (recovered after a crash: the file was still being written)';

function isAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

interface JournalRecord {
  projectId: string;
  path: string;
  executable: boolean;
  /** present once the file was finished, just before the store took it in */
  hash: ContentHash | null;
  /** the file was still being written (never closed) when the mount died */
  open: boolean;
  /** its base's bytes were still being copied in (staging-file.ts fillFrom): what is left to copy */
  fill: BaseFill | null;
}

interface BaseFill {
  hash: ContentHash;
  dataset: boolean;
  limit: number;
  written: Array<[number, number]>;
}

function parseFill(value: unknown): BaseFill | null {
  const fill = value as Partial<BaseFill> | null | undefined;
  if (fill == null || typeof fill.hash !== 'string' || !isContentHash(fill.hash) || !Number.isSafeInteger(fill.limit) || !Array.isArray(fill.written)) return null;
  const written = fill.written.filter((r): r is [number, number] => Array.isArray(r) && Number.isSafeInteger(r[0]) && Number.isSafeInteger(r[1]));
  return { hash: fill.hash, dataset: fill.dataset === true, limit: fill.limit!, written };
}

/**
 * Copies into `file` the base bytes a background fill had not copied yet when the mount died: every
 * byte below `limit` (and below the file's size) outside the written ranges. Bytes already copied are
 * copied again (the same bytes), so it does not matter how far the fill got.
 */
async function finishFill(file: string, fill: BaseFill, store: ContentStore | null): Promise<boolean> {
  const spans = await contentSpans(store, fill.hash, fill.dataset).catch(() => null);
  if (spans === null) return false;
  const [dest, src] = await Promise.all([open(file, 'r+'), openSpans(spans)]);
  try {
    const end = Math.min(fill.limit, (await dest.stat()).size);
    const buf = Buffer.allocUnsafe(1 << 20);
    let pos = 0;
    for (const [a, b] of [...fill.written.filter(([a]) => a < end), [end, end] as [number, number]]) {
      for (let at = pos; at < Math.min(a, end); ) {
        const n = await src.read(buf, Math.min(buf.length, a - at), at);
        if (n === 0) break;
        await dest.write(buf, 0, n, at);
        at += n;
      }
      pos = Math.max(pos, b);
    }
    await dest.sync();
    return true;
  } finally {
    await Promise.all([dest.close(), src.close()]);
  }
}

/** What a restart recovered from a crashed run. */
export interface Recovered {
  /** files closed (or fsynced) but not yet versioned, versioned now */
  versioned: number;
  /** paths of files still open for writing at the crash whose bytes were kept as a recovered version */
  unclosed: string[];
}

function parseRecord(text: string): JournalRecord | null {
  try {
    const value = JSON.parse(text) as Partial<JournalRecord>;
    if (typeof value.projectId !== 'string' || typeof value.path !== 'string') return null;
    const hash = typeof value.hash === 'string' && isContentHash(value.hash) ? value.hash : null;
    return { projectId: value.projectId, path: value.path, executable: value.executable === true, hash, open: value.open === true, fill: parseFill((value as { fill?: unknown }).fill) };
  } catch {
    return null;
  }
}

/**
 * Versions this project's journaled leftovers. A staging file whose record says it was still open
 * goes through `unclosedSink`, whose actor marks the version as recovered after a crash.
 */
export async function recoverStaging(
  options: { stagingDir: string; projectId: string; sink: MountSink; unclosedSink?: MountSink; store: ContentStore | null },
  logger: Logger,
): Promise<Recovered> {
  const result: Recovered = { versioned: 0, unclosed: [] };
  let names: string[];
  try {
    names = await readdir(options.stagingDir);
  } catch {
    return result;
  }
  const present = new Set(names);
  let recovered = 0;
  // The log first: it holds the older history; staging files are each their path's latest bytes.
  for (const name of names) {
    const match = JOURNAL_NAME.exec(name);
    if (match === null || match[1] !== options.projectId || isAlive(Number(match[2]))) continue;
    const file = join(options.stagingDir, name);
    recovered += await replayJournal(await readFile(file), options.sink, options.unclosedSink ?? options.sink, result.unclosed, logger);
    await rm(file, { force: true });
  }
  for (const name of names) {
    const match = STAGING_NAME.exec(name);
    if (match === null || isAlive(Number(match[1]))) continue;
    const file = join(options.stagingDir, name);
    let record: JournalRecord | null = null;
    if (present.has(`${name}.json`)) record = parseRecord(await readFile(`${file}.json`, 'utf8').catch(() => ''));
    if (record === null) {
      await rm(file, { force: true });
      await rm(`${file}.json`, { force: true });
      continue;
    }
    if (record.projectId !== options.projectId) continue; // another project's mount recovers it
    try {
      if (record.fill !== null && !(await finishFill(file, record.fill, options.store))) {
        // The base is gone from the store: the bytes that were not copied yet cannot be brought back.
        logger.error({ path: record.path, base: record.fill.hash }, 'a crashed mount was still copying a file\'s earlier content, which this store no longer has; kept as a recovered version, with zeros where that content was');
        record.open = true;
      }
      const sink = record.open ? (options.unclosedSink ?? options.sink) : options.sink;
      const written = await sink.write(record.path, { file, adopt: true }, record.executable);
      if (record.open) {
        if (written.versionIds.length > 0) result.unclosed.push(record.path);
        logger.warn({ path: record.path, size: written.entry.size }, 'kept the bytes of a file a crashed mount was still writing, as a recovered version');
      } else {
        recovered += 1;
        logger.warn({ path: record.path }, 'versioned a file a crashed mount had written but not captured');
      }
    } catch (error) {
      logger.error({ path: record.path, err: (error as Error).message }, 'could not version a file left by a crashed mount');
      continue;
    }
    await rm(`${file}.json`, { force: true });
  }
  // Records whose staging file is gone: the store took the file in just before the crash. Its version
  // may or may not have committed; `ifChanged` makes a second commit of the same content a no-op.
  for (const name of names) {
    if (!name.endsWith('.stg.json') || present.has(name.slice(0, -'.json'.length))) continue;
    const match = STAGING_NAME.exec(name.slice(0, -'.json'.length));
    if (match === null || isAlive(Number(match[1]))) continue;
    const file = join(options.stagingDir, name);
    const record = parseRecord(await readFile(file, 'utf8').catch(() => ''));
    if (record !== null && record.projectId !== options.projectId) continue;
    if (record?.hash != null) recovered += await versionStored(options, record, record.hash, logger);
    await rm(file, { force: true });
  }
  result.versioned = recovered;
  return result;
}

async function versionStored(
  options: { sink: MountSink; store: ContentStore | null },
  record: JournalRecord,
  hash: ContentHash,
  logger: Logger,
): Promise<number> {
  try {
    const store = options.store;
    if (store === null || !(await store.has(hash))) {
      logger.error({ path: record.path, hash }, 'a crashed mount had stored a file whose object is not readable here; not versioned');
      return 0;
    }
    // A loose object is handed over as its file; one kept otherwise (a small file in the SQLite pack,
    // or bytes that equal a dataset shard in a pack file) is streamed from the store.
    const object = store.objectFile === undefined ? null : await store.objectFile(hash);
    const content: SinkContent = object !== null ? { file: object, knownHash: hash, adopt: false } : await store.open(hash);
    const result = await options.sink.write(record.path, content, record.executable);
    if (result.versionIds.length > 0) logger.warn({ path: record.path }, 'versioned a file a crashed mount had stored but not recorded');
    return result.versionIds.length > 0 ? 1 : 0;
  } catch (error) {
    logger.error({ path: record.path, err: (error as Error).message }, 'could not version a file left by a crashed mount');
    return 0;
  }
}

/**
 * Applies a dead mount's log in order, idempotently: records the mount had captured before it died
 * (those before the path's last 'c') are skipped, and a write of what the path already holds records
 * nothing (ifChanged). Replaying the same log twice changes nothing the second time.
 */
async function replayJournal(bytes: Buffer, sink: MountSink, unclosedSink: MountSink, unclosed: string[], logger: Logger): Promise<number> {
  let applied = 0;
  const records = readJournal(bytes);
  const stagedAt = new Map<string, number>();
  /** path → the log offset before which its records are in the engine */
  const capturedBefore = new Map<string, number>();
  const lastWriteAt = new Map<string, number>();
  // An empty close followed by the path's next close: a shell's `>>` duplicates the descriptor it
  // opened and closes the original before writing (a FLUSH of the still-empty file), then closes the
  // one it wrote through. Live, that empty state is never a version (nothing captures it before the
  // real close); replayed, it was one, before every file a shell appended to.
  const emptyThenWritten = new Set<number>();
  const lastRecordOf = new Map<string, number>();
  records.forEach(({ record, at }, index) => {
    if (record.op === 's') stagedAt.set(record.path, index);
    if (record.op === 'c') capturedBefore.set(record.path, Math.max(capturedBefore.get(record.path) ?? -1, record.upTo ?? at));
    if (record.op === 'w') {
      const previous = lastRecordOf.get(record.path);
      if (previous !== undefined && records[previous]!.record.op === 'w' && (records[previous]!.record as { size: number }).size === 0) emptyThenWritten.add(previous);
      lastWriteAt.set(record.path, index);
    }
    if (record.op === 'r') {
      lastRecordOf.set(record.from, index);
      lastRecordOf.set(record.to, index);
    } else if (record.op !== 'c') lastRecordOf.set(record.path, index);
  });
  const captured = (path: string, at: number) => at < (capturedBefore.get(path) ?? -1);
  for (const [index, { record, data, at }] of records.entries()) {
    if (record.op === 's' || record.op === 'c') continue;
    if (record.op === 'r' ? captured(record.to, at) : captured(record.path, at)) continue;
    if (record.op === 'w' && index < (stagedAt.get(record.path) ?? -1)) continue; // superseded by its staging file
    if (emptyThenWritten.has(index)) continue;
    // An fsync mid-write is not a close: only the last such state before a later write counts.
    if (record.op === 'w' && record.open === true && index < lastWriteAt.get(record.path)!) continue;
    try {
      if (record.op === 'w') {
        const open = record.open === true;
        const result = await (open ? unclosedSink : sink).write(record.path, data ?? new Uint8Array(0), record.exec, record.link === true);
        if (result.versionIds.length > 0) {
          if (open) unclosed.push(record.path);
          else applied += 1;
        }
      } else if (record.op === 'd') {
        if (typeof (await sink.remove(record.path)) === 'object') applied += 1;
      } else {
        await sink.rename(record.from, record.to);
        applied += 1;
      }
    } catch (error) {
      // A rename whose source never reached the engine, a write where a directory is now: the later
      // records say what the final state is; skip this one.
      const code = error instanceof StrataError ? error.code : 'INTERNAL';
      if (code !== 'PATH_NOT_FOUND' && code !== 'STALE_BASE_VERSION') {
        logger.warn({ record: { ...record }, code, err: (error as Error).message }, 'mount recovery: a journal record could not be applied');
      }
    }
  }
  return applied;
}
