// The mount's write-ahead log for what lives only in memory between a close and its capture: small
// files' bytes (≤ 64 KiB, kept in memory so unpacking a tree needs no staging file per file), and the
// removals and renames recorded after the settle delay. A process killed with SIGKILL keeps what it
// wrote to the page cache, so the next start replays the log (recovery.ts) and no closed file is lost.
// (Large files have their journal next to their staging file: staging-file.ts.)
//
// Appends are synchronous, on purpose: a record is written at close(2) (FLUSH), before the kernel
// gets our answer, so a tool that closed a file and then saw the mount process die still has its file
// back after the restart. An append of a few KiB to a local file (never the mount itself) costs a few
// microseconds; a trip through the thread pool cost more, and could land after the kill. When the
// mount has nothing pending, every record so far is in the engine and the log is truncated.
// Format: [u32 LE header length][JSON header][size bytes of data]; a torn record at the end (the crash
// hit mid-append) is ignored on replay.
import * as fs from 'node:fs';
import { join } from 'node:path';

export type JournalRecord =
  // `open`: fsynced while a writer still had it (ops-open.ts fsync); the replay marks it recovered
  | { op: 'w'; path: string; exec: boolean; size: number; link?: true; open?: true }
  | { op: 'd'; path: string }
  | { op: 'r'; from: string; to: string }
  // The path's bytes now live in a staging file (with its own record, recovery.ts): the 'w' records
  // before this one are older than anything that file holds or was captured as, and must not be
  // replayed over it. Without it, a restart replayed a file's empty first close over its 2 MB capture.
  | { op: 's'; path: string }
  // Everything journaled for the path before this record (before byte `upTo` of the log, when given:
  // a close captured while a later one may already be logged) is in the engine (the reconciler
  // captured it): a replay skips those records. Without it, a restart replayed closes that had long
  // been captured — an empty first close, an older content — as new versions on top of the newest.
  | { op: 'c'; path: string; upTo?: number };

export function journalName(projectId: string, pid: number): string {
  return `journal-${projectId}-${pid}.log`;
}

export const JOURNAL_NAME = /^journal-(.+)-(\d+)\.log$/;

export class MountJournal {
  private fd: number | null = null;
  private size = 0;
  private failed: Error | null = null;
  /** A failed append could not be cut back off the log: what follows it would not replay. */
  private broken = false;

  constructor(readonly path: string) {}

  static forProject(stagingDir: string, projectId: string): MountJournal {
    return new MountJournal(join(stagingDir, journalName(projectId, process.pid)));
  }

  /** The problem writing the log, if any (reported in status; captures go on regardless). */
  get problem(): string | null {
    return this.failed === null ? null : `the mount's journal cannot be written: ${this.failed.message}`;
  }

  /** The errno of the problem writing the log (negative, as node reports it), or null. */
  get errno(): number | null {
    const errno = (this.failed as NodeJS.ErrnoException | null)?.errno;
    return typeof errno === 'number' && errno < 0 ? errno : null;
  }

  /**
   * False when the record could not be written (a full disk): the caller must make what it records
   * durable another way, or say so. The log is cut back to its last whole record, so the records
   * appended once there is room again still replay.
   */
  append(record: JournalRecord, data?: Uint8Array): boolean {
    const json = JSON.stringify(record);
    const headerLength = Buffer.byteLength(json);
    const dataLength = data === undefined ? 0 : data.length;
    // One write(2) per record: it runs while the kernel waits for our answer to close(2) (three
    // separate writes were ~1% of an untar's serving thread).
    const bytes = Buffer.allocUnsafe(4 + headerLength + dataLength);
    bytes.writeUInt32LE(headerLength, 0);
    bytes.write(json, 4, 'utf8');
    if (data !== undefined && dataLength > 0) bytes.set(data, 4 + headerLength);
    try {
      this.fd ??= fs.openSync(this.path, 'a', 0o600);
      this.writeAll(bytes);
    } catch (error) {
      this.fail(error as Error);
      return false;
    }
    if (!this.broken) this.failed = null;
    return true;
  }

  /**
   * The log's descriptor, for native/fuse to append a kept small file's close record itself (in this
   * format, with the same single-thread ordering: both sides run on the thread serving the mount), or
   * -1 when the log cannot be written.
   */
  descriptor(): number {
    if (this.failed !== null) return -1;
    try {
      this.fd ??= fs.openSync(this.path, 'a', 0o600);
      return this.fd;
    } catch (error) {
      this.failed ??= error as Error;
      return -1;
    }
  }

  /** native/fuse appended `bytes` through descriptor(). */
  appendedElsewhere(bytes: number): void {
    this.size += bytes;
  }

  /** native/fuse's append failed with `errno`. */
  failedElsewhere(errno: number): void {
    this.fail(Object.assign(new Error(`write failed (errno ${errno})`), { errno: -errno }));
  }

  /** A torn record left at the end would make every later one unreadable at replay: it is cut off. */
  private fail(error: Error): void {
    this.failed = error;
    if (this.fd === null) return;
    try {
      fs.ftruncateSync(this.fd, this.size);
    } catch {
      this.broken = true;
    }
  }

  /** Bytes appended since the log was last started over: where the next record begins. */
  get length(): number {
    return this.size;
  }

  /** Makes everything appended so far durable (fsync of a file the mount holds without versioning it). */
  async sync(): Promise<void> {
    const fd = this.fd;
    if (fd === null) return;
    await new Promise<void>((resolve, reject) => fs.fdatasync(fd, (error) => (error ? reject(error) : resolve())));
  }

  /** Everything logged so far is recorded in the engine: start the log over. */
  reset(): void {
    if (this.fd === null || this.size === 0) return;
    try {
      fs.ftruncateSync(this.fd, 0);
      this.size = 0;
    } catch (error) {
      this.failed ??= error as Error;
    }
  }

  async close(remove: boolean): Promise<void> {
    const fd = this.fd;
    this.fd = null;
    if (fd !== null) await new Promise<void>((resolve) => fs.close(fd, () => resolve()));
    if (remove) await fs.promises.rm(this.path, { force: true });
  }

  private writeAll(bytes: Uint8Array): void {
    let done = 0;
    while (done < bytes.length) done += fs.writeSync(this.fd!, bytes, done, bytes.length - done);
    this.size += bytes.length;
  }
}

/** Parses a log (`at`: where each record begins); stops at the first torn or unreadable record. */
export function readJournal(bytes: Buffer): Array<{ record: JournalRecord; data: Buffer | null; at: number }> {
  const out: Array<{ record: JournalRecord; data: Buffer | null; at: number }> = [];
  let pos = 0;
  while (pos + 4 <= bytes.length) {
    const at = pos;
    const headerLength = bytes.readUInt32LE(pos);
    if (pos + 4 + headerLength > bytes.length) break;
    let record: JournalRecord;
    try {
      record = JSON.parse(bytes.subarray(pos + 4, pos + 4 + headerLength).toString('utf8')) as JournalRecord;
    } catch {
      break;
    }
    pos += 4 + headerLength;
    if (record.op === 'w') {
      if (pos + record.size > bytes.length) break;
      out.push({ record, data: bytes.subarray(pos, pos + record.size), at });
      pos += record.size;
    } else {
      out.push({ record, data: null, at });
    }
  }
  return out;
}
