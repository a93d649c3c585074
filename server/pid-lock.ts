// A lock file that holds its owner's pid: one process per home for what must not run twice on it
// (the daemon: daemon/lock.ts; `strata serve` and migrate-storage: home-lock.ts).
//
// A pid file rather than flock(2): Node has no flock, and a process that only checks (migrate-storage,
// the CLI looking for its daemon) must be able to name the owner in its message. A lock whose pid is
// gone (kill -9, power loss) is stale: it blocks nobody and the next owner takes it over, so a crash
// never needs a manual clean-up. The file's first line is the pid; a second line, if any, says what
// holds it ("strata serve"), for the message of whoever is refused; a third, the host (host name, boot
// and pid namespace: host-identity.ts). A pid is a pid on that host only: in another PID namespace
// (a container, a second node simulated with `unshare --pid`) the CLI found its own pid 1 in a daemon's
// lock, took the daemon for running and talked to it. Which host may use the home at all is
// home-claim.ts's to say; a lock of another host is simply not alive here.

import { readFileSync, statSync } from 'node:fs';
import { mkdir, open, readFile, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { StrataError } from '../engine/errors.js';
import { currentHost } from './host-identity.js';

/**
 * Whether `pid` is another live process that can be the one that wrote the lock `file`. After a crash
 * (kill -9, power loss and a reboot) the pid is often some other process's: another user's (kill says
 * EPERM), root's, or one started since. Such a process held the home's daemon back for good (it
 * refused with DAEMON_RUNNING until the file was deleted by hand), and the CLI, taking it for the
 * daemon, sent the owner key to whatever listened at the recorded address (another user's listener).
 */
function alive(pid: number, file: string): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: alive but not ours to signal (a daemon run by root on this home is one); it still has
    // to pass the checks below, which /proc answers for any user's process.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // The lock's owner created the file, so the file belongs to the owner's user: a process of another
  // user (or root's, for a lock a user's daemon wrote) did not write it; the pid was reused.
  const uid = processUid(pid);
  if (uid !== null) {
    try {
      if (uid !== statSync(file).uid) return false;
    } catch {
      // no lock file any more: judge by the command line alone
    }
  }
  // The pid may have been reused by an unrelated process after a crash.
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('node');
  } catch {
    return true;
  }
}

/** The effective uid of process `pid` (from /proc, readable for any user's process), or null. */
function processUid(pid: number): number | null {
  try {
    const uids = /^Uid:\s+\d+\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return uids === undefined ? null : Number(uids);
  } catch {
    return null;
  }
}

export interface PidLockHolder {
  pid: number;
  /** what the owner wrote as its second line ("strata serve"), or '' */
  holder: string;
  /** the owner's host (hostKey()), or '' in a lock written before hosts were recorded */
  host?: string;
}

/** This process's host, as a pid lock records it. */
function hostKey(): string {
  const { host, bootId, pidNs } = currentHost();
  return `${host} ${bootId} ${pidNs}`;
}

function parse(text: string): PidLockHolder {
  const [pid = '', holder = '', host = ''] = text.split('\n');
  return { pid: Number(pid.trim()), holder: holder.trim(), host: host.trim() };
}

/** Whether the lock's owner is a live process of this host. */
function liveHere(owner: PidLockHolder, file: string): boolean {
  if (owner.host !== undefined && owner.host !== '' && owner.host !== hostKey()) return false;
  return owner.pid === process.pid || alive(owner.pid, file);
}

/** The live process holding the lock file, or null when none does (no file, or a stale one). */
export function pidLockHolder(file: string): PidLockHolder | null {
  let owner: PidLockHolder;
  try {
    owner = parse(readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
  // This very process counts (a daemon or server started in-process, as tests do).
  return liveHere(owner, file) ? { pid: owner.pid, holder: owner.holder } : null;
}

/** A write refused for want of space, said as such and naming the file (was: INTERNAL, "ENOSPC ... write"). */
function diskFull(error: unknown, file: string): StrataError | null {
  const code = (error as NodeJS.ErrnoException).code;
  if (code !== 'ENOSPC' && code !== 'EDQUOT') return null;
  return new StrataError('DISK_FULL', {
    message: `The disk holding ${file} is full (${code}): free space on that filesystem and start again`,
    details: { path: file, code },
    cause: error,
  });
}

export interface PidLock {
  release(): Promise<void>;
}

/**
 * Creates `file` holding this process's pid (and `holder`), replacing a stale one. `busy` makes the
 * error thrown when a live process holds it (`undefined`: the lock changed hands three times while
 * this process tried, which only a crowd of starters racing does).
 */
export async function acquirePidLock(file: string, busy: (owner: PidLockHolder | undefined) => StrataError, holder = ''): Promise<PidLock> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await open(file, 'wx', 0o600);
      try {
        await handle.writeFile(`${process.pid}\n${holder}\n${hostKey()}\n`);
      } catch (error) {
        await handle.close();
        await rm(file, { force: true });
        throw diskFull(error, file) ?? error;
      }
      await handle.close();
      return {
        async release() {
          const owner = parse(await readFile(file, 'utf8').catch(() => ''));
          if (owner.pid === process.pid) await rm(file, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = parse(await readFile(file, 'utf8').catch(() => ''));
    if (owner.pid !== process.pid && liveHere(owner, file)) throw busy({ pid: owner.pid, holder: owner.holder });
    // Stale: replace it. A racing starter that also saw it stale loses the 'wx' create above, except
    // when one's rm and create both fall between the other's read and rm: two starters within
    // microseconds of each other on a crashed owner's lock is the case this does not exclude.
    await rm(file, { force: true });
  }
  throw busy(undefined);
}
