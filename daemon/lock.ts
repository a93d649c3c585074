// One daemon per home: two would both version every write. `<home>/daemon/daemon.lock` holds the
// owner's pid; a lock whose pid is gone (kill -9, power loss) is stale and taken over.

import { readFileSync } from 'node:fs';
import { mkdir, open, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { StrataError } from '../engine/errors.js';

function alive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  // The pid may have been reused by an unrelated process after a crash.
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('node');
  } catch {
    return true;
  }
}

/** The pid of the live daemon holding the home's lock, or null when none does. */
export function daemonLockOwner(daemonDir: string): number | null {
  let pid: number;
  try {
    pid = Number(readFileSync(join(daemonDir, 'daemon.lock'), 'utf8').trim());
  } catch {
    return null;
  }
  // This very process counts (a daemon started in-process, as tests do).
  return pid === process.pid || alive(pid) ? pid : null;
}

export interface DaemonLock {
  release(): Promise<void>;
}

export async function acquireDaemonLock(daemonDir: string): Promise<DaemonLock> {
  await mkdir(daemonDir, { recursive: true, mode: 0o700 });
  const file = join(daemonDir, 'daemon.lock');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await open(file, 'wx', 0o600);
      try {
        await handle.writeFile(`${process.pid}\n`);
      } finally {
        await handle.close();
      }
      return {
        async release() {
          const owner = await readFile(file, 'utf8').catch(() => '');
          if (Number(owner.trim()) === process.pid) await rm(file, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const pid = Number((await readFile(file, 'utf8').catch(() => '')).trim());
    if (alive(pid)) {
      throw new StrataError('DAEMON_RUNNING', {
        message: `A Strata daemon (pid ${pid}) already runs for this home; stop it first, or use \`strata status\``,
        details: { pid, lock: file },
      });
    }
    // Stale: replace it (a racing starter that also saw it stale loses the 'wx' create above).
    await rm(file, { force: true });
  }
  throw new StrataError('DAEMON_RUNNING', { message: `Could not take the daemon lock ${file}`, details: { lock: file } });
}
