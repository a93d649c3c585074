// `<home>/server.lock`: held by `strata serve` while it serves the home, and by `strata admin
// migrate-storage` while it copies it. migrate-storage copies a snapshot of the home's SQLite: a
// version a running server wrote after the copy would be lost at the cutover (a tester did exactly
// that, and the command reported "identical, fsck ok"). Taking the same lock also stops a server
// (a systemd restart, say) from starting on the home halfway through a migration, and a second
// `strata serve` on one home.
//
// The lock is per home directory: replicas on Postgres + S3 each have a home of their own (scratch
// only) and never block each other. A crashed holder's lock is stale and blocks nobody (pid-lock.ts).
// A pid means nothing on another host: both first claim the home for this host (home-claim.ts).

import { join } from 'node:path';
import { daemonLayout } from '../daemon/config.js';
import { daemonLockOwner } from '../daemon/lock.js';
import { StrataError } from '../engine/errors.js';
import { claimHome, type HomeClaimOptions } from './home-claim.js';
import { acquirePidLock, type PidLock, type PidLockHolder } from './pid-lock.js';

const SERVE = 'strata serve';
const MIGRATE = 'strata admin migrate-storage';

export function serverLockFile(home: string): string {
  return join(home, 'server.lock');
}

function inUse(home: string, file: string, owner: PidLockHolder | undefined, then: string): StrataError {
  if (owner === undefined) return new StrataError('HOME_IN_USE', { message: `Could not take the lock ${file}: other processes keep taking it`, details: { lock: file } });
  const who = owner.holder === '' ? 'another Strata process' : `\`${owner.holder}\``;
  const doing = owner.holder === MIGRATE ? 'is migrating' : 'is serving';
  return new StrataError('HOME_IN_USE', {
    message: `${who} (pid ${owner.pid}) ${doing} ${home}: ${then}`,
    details: { pid: owner.pid, holder: owner.holder, home, lock: file },
  });
}

/** The home claimed for this host, then `lock` taken; one release lets both go. */
async function claimed(home: string, holder: string, options: Pick<HomeClaimOptions, 'onWait' | 'onLost'>, lock: () => Promise<PidLock>): Promise<PidLock> {
  const claim = await claimHome(home, { holder, ...options });
  let pidLock: PidLock;
  try {
    pidLock = await lock();
  } catch (error) {
    await claim.release();
    throw error;
  }
  return {
    async release() {
      await pidLock.release().finally(() => claim.release());
    },
  };
}

/** `strata serve`: one server per home. */
export function acquireServeLock(home: string, options: Pick<HomeClaimOptions, 'onWait' | 'onLost'> = {}): Promise<PidLock> {
  const file = serverLockFile(home);
  return claimed(home, SERVE, options, () =>
    acquirePidLock(file, (owner) => inUse(home, file, owner, owner?.holder === MIGRATE ? 'serve it once the migration has finished' : 'stop it first, or give this server a home of its own'), SERVE),
  );
}

/**
 * migrate-storage: refused while a server (or the daemon, which writes to the same SQLite) runs on
 * the home, and holding the home against a server starting until the copy is verified.
 */
export async function acquireMigrateLock(home: string): Promise<PidLock> {
  const daemon = daemonLockOwner(daemonLayout(home).dir);
  if (daemon !== null) {
    throw new StrataError('DAEMON_RUNNING', {
      message: `A Strata daemon (pid ${daemon}) runs on ${home}: stop it (or its systemd service) first, then migrate`,
      details: { pid: daemon, home },
    });
  }
  const file = serverLockFile(home);
  return claimed(home, MIGRATE, {}, () => acquirePidLock(file, (owner) => inUse(home, file, owner, 'stop the server first (writes it takes during the copy would be lost), then migrate'), MIGRATE));
}
