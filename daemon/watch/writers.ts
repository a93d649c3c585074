// Is a file still open for writing? The watcher cannot be told when a writer closes a file: Node's
// fs.watch (libuv) asks inotify for IN_MODIFY/IN_ATTRIB/IN_CREATE/IN_DELETE/IN_MOVED_*, never for
// IN_CLOSE_WRITE, and a second inotify instance of our own would double the watches counted against
// fs.inotify.max_user_watches. So settle.ts asks Linux directly: every open file of a process is a
// link under /proc/PID/fd, and /proc/PID/fdinfo/N holds its open flags.
//
// Without this, a `cp` of a 500 MB file that the kernel stalls for writeback (balance_dirty_pages
// pauses the writer; measured stalls well over the 100 ms settle delay) was versioned mid-write: in 4
// of 5 copies a truncated version (60 MiB file → 42 MiB version) that sync then pushed to the other
// workstation.
//
// Cost: one readlink per open file of every process we may inspect (~10 ms for 515 open files on the
// 2-core test VM; a busy workstation has tens of thousands). Only files of 1 MiB and more that went
// quiet are asked about, requests made during a scan share the next one, and the scan yields to the
// event loop after each process, so an editor's save elsewhere is not held up behind it.
//
// What it cannot see: processes of other users (their fd directories are unreadable unless we are
// root) and processes in other PID namespaces (a container writing into a bind mount). For a file
// another user owns the answer is "cannot tell" (null), and settle.ts falls back to a longer quiet.

import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { lstat, realpath } from 'node:fs/promises';
import { setImmediate as yieldToLoop } from 'node:timers/promises';

export interface WriterProbe {
  /**
   * true: a process holds `file` (absolute) open for writing; false: none we can see does; null: we
   * cannot tell (no /proc, or the file belongs to another user whose processes we cannot inspect).
   */
  openForWriting(file: string | Buffer): Promise<boolean | null>;
}

export interface WriterProbeOptions {
  /** the proc filesystem (tests point it elsewhere) */
  proc?: string;
  /** our user id (root inspects every process) */
  uid?: number;
}

/** O_WRONLY | O_RDWR: the access mode bits of an fdinfo `flags:` line (octal). */
const WRITE_ACCESS = 0o3;

/** Errors that only mean "this process or fd is gone, or is not ours to inspect". */
const UNSEEN = new Set(['ENOENT', 'ESRCH', 'EACCES', 'EPERM', 'ENOTDIR']);

export function createWriterProbe(options: WriterProbeOptions = {}): WriterProbe {
  const proc = options.proc ?? '/proc';
  const uid = options.uid ?? process.getuid?.() ?? 0;
  // Real paths asked about since the last scan began, each with the callers waiting for the answer.
  let queued = new Map<string, Array<(open: boolean | null) => void>>();
  let draining = false;

  async function drain(): Promise<void> {
    draining = true;
    try {
      while (queued.size > 0) {
        const batch = queued;
        queued = new Map();
        let open: Set<string> | null;
        try {
          open = await scan(proc, new Set(batch.keys()));
        } catch {
          // /proc missing or unreadable: we cannot tell, and say so (settle.ts then waits for quiet).
          open = null;
        }
        for (const [file, waiting] of batch) for (const resolve of waiting) resolve(open === null ? null : open.has(file));
      }
    } finally {
      draining = false;
    }
  }

  return {
    async openForWriting(file) {
      let real: string;
      try {
        const st = await lstat(file);
        if (!st.isFile()) return false;
        if (uid !== 0 && st.uid !== uid) return null;
        // /proc/PID/fd links name the file by its real path.
        real = await realpath(file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw error;
      }
      const answer = new Promise<boolean | null>((resolve) => {
        const waiting = queued.get(real);
        if (waiting) waiting.push(resolve);
        else queued.set(real, [resolve]);
      });
      if (!draining) void drain();
      return answer;
    },
  };
}

/** The files of `wanted` that some process we can inspect holds open for writing. */
async function scan(proc: string, wanted: Set<string>): Promise<Set<string>> {
  const open = new Set<string>();
  for (const pid of readdirSync(proc)) {
    if (!/^\d+$/.test(pid)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`${proc}/${pid}/fd`);
    } catch (error) {
      if (UNSEEN.has((error as NodeJS.ErrnoException).code ?? '')) continue;
      throw error;
    }
    for (const fd of fds) {
      try {
        const target = readlinkSync(`${proc}/${pid}/fd/${fd}`);
        if (!wanted.has(target) || open.has(target)) continue;
        const flags = /^flags:\s*([0-7]+)$/m.exec(readFileSync(`${proc}/${pid}/fdinfo/${fd}`, 'utf8'));
        if (flags !== null && (Number.parseInt(flags[1]!, 8) & WRITE_ACCESS) !== 0) open.add(target);
      } catch (error) {
        // The fd was closed (or the process ended) between the listing and the look.
        if (UNSEEN.has((error as NodeJS.ErrnoException).code ?? '')) continue;
        throw error;
      }
    }
    if (open.size === wanted.size) break;
    // Sync calls keep the libuv threadpool free for the hashing workers; yielding after each process
    // keeps the event loop responsive on a machine with tens of thousands of open files.
    await yieldToLoop();
  }
  return open;
}
