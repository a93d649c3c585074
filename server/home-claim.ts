// A home is used from one host at a time: `<home>/home.lock` (issue 38 item 12).
//
// Two nodes' daemons on one home on NFS both ran (each took the other's pid lock for stale) and after
// 150 writes each, metadata.sqlite, the store's packed.sqlite and state.sqlite were all "malformed".
// SQLite's WAL keeps its index in shared memory (the -shm file, mapped): every process using a
// database must be on the same host, which no network filesystem gives by itself. Within one host WAL
// is sound on any filesystem that maps files coherently, NFS included (the processes share one page
// cache). So every process that opens a home's databases first claims the home for its host, and a
// process of another host is refused (HOME_HELD_BY_HOST, naming the host, pid and since when).
//
// The proof, strongest first:
// - the filesystem's own locks (fcntl OFD locks; native/chunker/src/lock.c), which NFS, SMB, CephFS,
//   GPFS and Lustre (-o flock) carry to the server: every process using the home holds a SHARED lock
//   on the USERS byte, and one of them, the keeper, an EXCLUSIVE lock on the KEEPER byte. Another host
//   finds them held for as long as a process of ours lives, however late its renewals are;
// - the lease in the file (home-lease.ts): the host's identity and a renewal every 10 s. Where locks
//   stay on the client (sshfs and other FUSE clients, NFS -o nolock/local_lock) or do not exist, it is
//   what keeps a second host out, and it covers a holder whose locks the server dropped;
// - where locks do not reach other hosts, a host that takes the home writes its record, waits a
//   moment and reads it back before it opens anything: of two hosts starting together, one sees the
//   other's record and backs off.
//
// A keeper that finds the record taken by another host (it was frozen, or cut off, for longer than the
// lease) stops at once (onLost). Processes of the owning host share the home as before (daemon, serve,
// the CLI's in-process commands); when the keeper exits, another of them takes over renewing. A clean
// release with nothing else of the host still using the home marks the record released, so another
// node may start at once; a crash leaves it to lapse (90 s after the last renewal by default).
//
// The parts: the lease's rules (home-lease.ts, pure), the host's identity (host-identity.ts), the
// locks (file-locks.ts), and the claim a process holds (home-claim-keeper.ts).
//
// STRATA_HOME_FILE_LOCKS=0 leaves the locks out (lease only): for an NFSv3 server that keeps a dead
// client's locks until that client reboots, which would otherwise hold the home for good.

import { constants as fsConstants, existsSync, openSync, realpathSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { detectFs } from '../daemon/watch/fs-type.js';
import type { StrataError } from '../engine/errors.js';
import { loadFileLocks } from './file-locks.js';
import { Claim } from './home-claim-keeper.js';
import { leaseMsFromEnv, leaseTiming } from './home-lease.js';
import { currentHost, type HostIdentity } from './host-identity.js';

export function homeLockFile(home: string): string {
  return join(home, 'home.lock');
}

/** How the claim proves itself: locks seen by other hosts, locks this host alone sees, or none. */
export type ClaimLocks = 'shared' | 'local' | 'none';

export interface HomeClaimStatus {
  home: string;
  host: string;
  pid: number;
  holder: string;
  since: string;
  /** this process renews the lease (one process of the host does) */
  keeper: boolean;
  locks: ClaimLocks;
  leaseMs: number;
  renewMs: number;
  /** the filesystem of the home, e.g. 'nfs4 (filer:/export/home)'; null when local */
  network: string | null;
}

export interface HomeClaim {
  status(): HomeClaimStatus;
  /** Lets the home go: marks it released when nothing else of this host uses it (another host may take it at once). */
  release(): Promise<void>;
}

export interface HomeClaimOptions {
  /** what the claimer is, for whoever is refused: 'strata daemon', 'strata serve', 'strata fsck' ... */
  holder: string;
  /** wall clock (ms since the epoch); default Date.now */
  now?: () => number;
  /** monotonic clock (ms); default performance.now */
  monotonic?: () => number;
  /** default STRATA_HOME_LEASE_MS, else 60 s */
  leaseMs?: number;
  /** default this process's (tests pretend to be another host) */
  self?: HostIdentity;
  /** default: unless STRATA_HOME_FILE_LOCKS=0 */
  fileLocks?: boolean;
  /** told when the claim has to wait for another host's lapsed lease, with what it waits for */
  onWait?: (message: string) => void;
  /**
   * The home was taken by another host while this process held it (frozen or cut off for longer than
   * the lease): the process must stop using the home's databases at once. Default: throws nothing,
   * exits the process with status 75 (EX_TEMPFAIL) after writing the reason to stderr.
   */
  onLost?: (error: StrataError) => void;
}

/**
 * Claims `home` for this host (see the top of this file). Throws HOME_HELD_BY_HOST when another host
 * uses it; waits (telling onWait) while another host's lapsed lease is being watched.
 */
export async function claimHome(home: string, options: HomeClaimOptions): Promise<HomeClaim> {
  await mkdir(home, { recursive: true, mode: 0o700 });
  const file = homeLockFile(home);
  const now = options.now ?? Date.now;
  const mono = options.monotonic ?? (() => performance.now());
  const self = options.self ?? currentHost();
  const timing = leaseTiming(options.leaseMs ?? leaseMsFromEnv());
  const fs = await detectFs(realpathSync(home));
  const useLocks = options.fileLocks ?? process.env['STRATA_HOME_FILE_LOCKS'] !== '0';
  const native = useLocks ? loadFileLocks() : null;
  const fd = openSync(file, fsConstants.O_RDWR | fsConstants.O_CREAT, 0o600);
  const claim = new Claim(home, file, fd, self, timing, options, now, mono, fs);
  try {
    await claim.acquire(native, options.onWait ?? (() => undefined));
  } catch (error) {
    claim.close();
    throw error;
  }
  return claim;
}

/**
 * Runs `fn` with `home` claimed for this host: the CLI's in-process commands (init without a daemon,
 * fsck and gc --home, admin bootstrap ...) open the home's databases as the daemon does.
 */
export async function withHomeClaim<T>(home: string, holder: string, fn: () => Promise<T>, options: { existingOnly?: boolean } = {}): Promise<T> {
  // A command that creates nothing (fsck, gc) on a directory that holds no home: nothing to claim, and
  // no lock file to leave behind; it refuses by itself (NO_STRATA_DATA).
  if (options.existingOnly === true && !existsSync(join(home, 'metadata.sqlite'))) return fn();
  const claim = await claimHome(home, { holder, onWait: (message) => process.stderr.write(`strata: ${message}\n`) });
  try {
    return await fn();
  } finally {
    await claim.release();
  }
}
