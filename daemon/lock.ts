// One daemon per home: two would both version every write. `<home>/daemon/daemon.lock` holds the
// owner's pid; a lock whose pid is gone (kill -9, power loss) is stale and taken over
// (server/pid-lock.ts, which `strata serve` uses for its home too).

import { join } from 'node:path';
import { StrataError } from '../engine/errors.js';
import { acquirePidLock, type PidLock, pidLockHolder } from '../server/pid-lock.js';

/** The pid of the live daemon holding the home's lock, or null when none does. */
export function daemonLockOwner(daemonDir: string): number | null {
  return pidLockHolder(join(daemonDir, 'daemon.lock'))?.pid ?? null;
}

export type DaemonLock = PidLock;

export async function acquireDaemonLock(daemonDir: string): Promise<DaemonLock> {
  const file = join(daemonDir, 'daemon.lock');
  return acquirePidLock(file, (owner) =>
    owner === undefined
      ? new StrataError('DAEMON_RUNNING', { message: `Could not take the daemon lock ${file}`, details: { lock: file } })
      : new StrataError('DAEMON_RUNNING', {
          message: `A Strata daemon (pid ${owner.pid}) already runs for this home; stop it first, or use \`strata status\``,
          details: { pid: owner.pid, lock: file },
        }),
  );
}
