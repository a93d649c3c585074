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
// STRATA_HOME_FILE_LOCKS=0 leaves the locks out (lease only): for an NFSv3 server that keeps a dead
// client's locks until that client reboots, which would otherwise hold the home for good.

import { constants as fsConstants, existsSync, openSync, realpathSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { constants as os } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { closeSync, fdatasync, write } from 'node:fs';
import { promisify } from 'node:util';
import { detectFs, type FsInfo, locksReachOtherHosts } from '../daemon/watch/fs-type.js';
import { nativeChunkerPath } from '../engine/datasets/gear-chunker.js';
import { StrataError } from '../engine/errors.js';
import { currentHost, describeHost, type HostIdentity } from './host-identity.js';
import {
  encodeRecord,
  judgeLease,
  LeaseObserver,
  type LeaseRecord,
  type LeaseTiming,
  type LeaseVerdict,
  leaseMsFromEnv,
  leaseTiming,
  newRecord,
  parseRecord,
  renewRecord,
  stillOurs,
} from './home-lease.js';

const writeAsync = promisify(write);
const fdatasyncAsync = promisify(fdatasync);

/** Past the record (which is 1 KiB): lock ranges may lie beyond the end of a file. */
const KEEPER_BYTE = 1 << 20;
const USERS_BYTE = KEEPER_BYTE + 1;
const UNLOCK = 0;
const SHARED = 1;
const EXCLUSIVE = 2;

export function homeLockFile(home: string): string {
  return join(home, 'home.lock');
}

interface LockAddon {
  lockRange(fd: number, start: number, length: number, mode: number): number;
  lockTest(fd: number, start: number, length: number, mode: number): number;
}

let addon: LockAddon | null | undefined;

/** The engine addon's lock functions, or null where it is not built (then: the lease alone). */
function loadLocks(): LockAddon | null {
  if (addon !== undefined) return addon;
  addon = null;
  const path = nativeChunkerPath();
  if (path === null) return addon;
  try {
    const loaded = createRequire(import.meta.url)(path) as Partial<LockAddon>;
    if (typeof loaded.lockRange === 'function' && typeof loaded.lockTest === 'function') addon = loaded as LockAddon;
  } catch {
    // an addon that does not load: the lease alone
  }
  return addon;
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

function defaultOnLost(error: StrataError): void {
  process.stderr.write(`strata: ${error.code}: ${error.message}\n`);
  process.exit(75);
}

function ago(ms: number): string {
  if (ms < 1_000) return 'just now';
  if (ms < 120_000) return `${Math.round(ms / 1_000)} s ago`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min ago`;
  return `${Math.round(ms / 3_600_000)} h ago`;
}

function heldError(home: string, record: LeaseRecord, self: HostIdentity, nowMs: number, why: string): StrataError {
  const where = describeHost(record, self);
  return new StrataError('HOME_HELD_BY_HOST', {
    message:
      `the Strata home ${home} is in use on ${where} (\`${record.holder}\`, pid ${record.pid}, since ${record.since}; lease renewed ${ago(nowMs - Date.parse(record.renewedAt))}): ${why}. ` +
      `A home is used from one host at a time (its SQLite databases would be corrupted otherwise): stop Strata on ${record.host} first (Ctrl-C its \`strata daemon\`/\`strata watch\`, \`systemctl --user stop strata-daemon\`, or end the job that runs it), ` +
      'or give this host a home of its own (--home DIR or STRATA_HOME, on a local disk or a directory of its own)',
    details: { home, host: record.host, pid: record.pid, holder: record.holder, since: record.since, renewedAt: record.renewedAt, reason: why },
  });
}

/** What another host's claim on `home` looks like from here (for the CLI); null when there is none. */
export async function otherHostClaim(home: string, options: { now?: () => number; self?: HostIdentity; leaseMs?: number } = {}): Promise<LeaseVerdict | null> {
  const text = await readFile(homeLockFile(home), 'utf8').catch(() => '');
  const verdict = judgeLease(text, options.self ?? currentHost(), (options.now ?? Date.now)(), leaseTiming(options.leaseMs ?? leaseMsFromEnv()));
  return verdict.kind === 'live' || verdict.kind === 'lapsed' ? verdict : null;
}

/** The error a CLI command gives when another host holds `home` (live lease), else null. */
export async function otherHostRefusal(home: string, doing: string): Promise<StrataError | null> {
  const verdict = await otherHostClaim(home);
  if (verdict?.kind !== 'live') return null;
  return heldError(home, verdict.record, currentHost(), Date.now(), doing);
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
  const native = useLocks ? loadLocks() : null;
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

class Claim implements HomeClaim {
  #native: LockAddon | null = null;
  #locks: ClaimLocks = 'none';
  #keeper = false;
  #record: LeaseRecord | null = null;
  #timer: NodeJS.Timeout | undefined;
  #lastRenewal = 0;
  #released = false;
  #ticking: Promise<void> | null = null;

  constructor(
    readonly home: string,
    readonly file: string,
    readonly fd: number,
    readonly self: HostIdentity,
    readonly timing: LeaseTiming,
    readonly options: HomeClaimOptions,
    readonly now: () => number,
    readonly mono: () => number,
    readonly fs: FsInfo | null,
  ) {}

  /** The file as the server has it now: a fresh open (NFS revalidates its cache at open, close-to-open). */
  async #read(): Promise<string> {
    return readFile(this.file, 'utf8').catch(() => '');
  }

  #lock(byte: number, mode: number): number {
    return this.#native === null ? 0 : this.#native.lockRange(this.fd, byte, 1, mode);
  }

  #test(byte: number, mode: number): number {
    return this.#native === null ? 0 : this.#native.lockTest(this.fd, byte, 1, mode);
  }

  async acquire(native: LockAddon | null, onWait: (message: string) => void): Promise<void> {
    this.#native = native;
    if (native !== null) {
      const probe = native.lockTest(this.fd, USERS_BYTE, 1, SHARED);
      if (probe === 0 || probe === os.errno.EAGAIN) this.#locks = locksReachOtherHosts(this.fs) ? 'shared' : 'local';
      else this.#native = null; // ENOLCK, EOPNOTSUPP ...: this filesystem does not lock; the lease alone
    }
    const observer = new LeaseObserver();
    let waited = false;
    for (let attempt = 0; ; attempt++) {
      const text = await this.#read();
      const verdict = judgeLease(text, this.self, this.now(), this.timing);
      if (verdict.kind === 'live') throw heldError(this.home, verdict.record, this.self, this.now(), 'it was renewed within its lease');
      if (verdict.kind === 'lapsed' || verdict.kind === 'unreadable') {
        // Whoever holds the users lock still uses the home, whatever its renewals say (a holder frozen
        // or cut off from the server; on NFSv3, a dead client whose locks the server kept).
        if (this.#test(USERS_BYTE, EXCLUSIVE) === os.errno.EAGAIN) {
          if (verdict.kind === 'lapsed') {
            throw heldError(this.home, verdict.record, this.self, this.now(), `its lease lapsed ${ago(verdict.lapsedForMs)}, but the filesystem still shows its processes holding the home (a frozen or cut-off host; on NFSv3, a crashed client keeps its locks until it reboots: there, STRATA_HOME_FILE_LOCKS=0 relies on the lease alone)`);
          }
          throw new StrataError('HOME_HELD_BY_HOST', {
            message: `the Strata home ${this.home} is locked by a process this host cannot name (${this.file} holds no record it can read)`,
            details: { home: this.home, reason: 'locked, no readable record' },
          });
        }
        const unchanged = observer.note(text, this.mono());
        if (unchanged < this.timing.observeMs) {
          if (!waited) {
            waited = true;
            onWait(
              verdict.kind === 'lapsed'
                ? `the home ${this.home} was last used on ${describeHost(verdict.record, this.self)} (\`${verdict.record.holder}\`, pid ${verdict.record.pid}), whose lease lapsed ${ago(verdict.lapsedForMs)}: making sure it is not renewed (${Math.ceil(this.timing.observeMs / 1000)} s)`
                : `${this.file} holds no readable record: making sure no other host is writing it (${Math.ceil(this.timing.observeMs / 1000)} s)`,
            );
          }
          await sleep(Math.min(1_000, Math.max(50, this.timing.observeMs - unchanged)));
          continue;
        }
      }
      // Free, ours, or lapsed and watched: join the users of the home, then keep it or find its keeper.
      if (!(await this.#joinUsers())) {
        await sleep(50);
        continue;
      }
      const keeper = this.#lock(KEEPER_BYTE, EXCLUSIVE);
      if (keeper === 0) {
        await this.#becomeKeeper(verdict);
        return;
      }
      // Another process keeps it: one of this host (then share), or of another host.
      this.#lock(USERS_BYTE, UNLOCK);
      const again = judgeLease(await this.#read(), this.self, this.now(), this.timing);
      if (again.kind === 'ours') {
        this.#lock(USERS_BYTE, SHARED);
        this.#record = again.record;
        this.#startTimer();
        return;
      }
      if (again.kind === 'live' || again.kind === 'lapsed') throw heldError(this.home, again.record, this.self, this.now(), 'its keeper holds the lock');
      // A keeper that has yet to write its record (it took the lock a moment ago): look again.
      if (attempt > 200) throw new StrataError('HOME_HELD_BY_HOST', { message: `the Strata home ${this.home} is locked by a process that writes no record in ${this.file}`, details: { home: this.home } });
      await sleep(50);
    }
  }

  /** The shared users lock; false when a releasing keeper's brief exclusive test holds it this instant. */
  async #joinUsers(): Promise<boolean> {
    const rc = this.#lock(USERS_BYTE, SHARED);
    if (rc === 0) return true;
    if (rc === os.errno.EAGAIN) return false;
    throw new StrataError('STORAGE_ERROR', { message: `Could not lock ${this.file} (errno ${rc})`, details: { path: this.file, errno: rc } });
  }

  async #becomeKeeper(verdict: LeaseVerdict): Promise<void> {
    this.#keeper = true;
    const pid = process.pid;
    // This host's record goes on (`since` kept) while its use of the home has not lapsed; after a
    // lapse (every process of the host gone for longer than the lease) the host starts anew.
    const current = verdict.kind === 'ours' && this.now() - Date.parse(verdict.record.renewedAt) < this.timing.leaseMs + this.timing.marginMs ? verdict.record : null;
    const record = current !== null ? renewRecord(current, pid, this.options.holder, this.now()) : newRecord(this.self, pid, this.options.holder, this.now(), this.timing.leaseMs);
    await this.#write(record);
    if (verdict.kind !== 'ours' && this.#locks !== 'shared') {
      // Nothing but the record tells another host we are here: give a host that wrote its own record
      // at the same moment the time to see ours, and look whether it did.
      await sleep(Math.min(2_000, this.timing.renewMs));
      const text = await this.#read();
      if (!stillOurs(text, this.self)) {
        const other = parseRecord(text);
        this.#keeper = false;
        if (other !== null) throw heldError(this.home, other, this.self, this.now(), 'it took the home at the same moment as this process');
        throw new StrataError('HOME_HELD_BY_HOST', { message: `the Strata home ${this.home} changed hands while this process took it; try again`, details: { home: this.home } });
      }
    }
    this.#startTimer();
  }

  async #write(record: LeaseRecord): Promise<void> {
    await writeAsync(this.fd, encodeRecord(record), 0, undefined, 0);
    // On NFS the write is in this client's cache until it is flushed: another host reads the server.
    await fdatasyncAsync(this.fd);
    this.#record = record;
    this.#lastRenewal = this.mono();
  }

  #startTimer(): void {
    this.#lastRenewal = this.mono();
    this.#timer = setInterval(() => {
      this.#ticking ??= this.#tick().finally(() => {
        this.#ticking = null;
      });
    }, this.timing.renewMs);
    // The claim lives as long as the process uses the home; it must not keep the process alive.
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    if (this.#released) return;
    try {
      if (!this.#keeper) {
        // A user of the home: take over keeping it if its keeper went (the daemon stopped, serve goes on).
        if (this.#lock(KEEPER_BYTE, EXCLUSIVE) !== 0) {
          const text = await this.#read();
          if (text.trim() !== '' && !stillOurs(text, this.self) && !this.#released) this.#lost(text);
          return;
        }
        this.#keeper = true;
      }
      const text = await this.#read();
      if (this.#released) return;
      if (!stillOurs(text, this.self)) {
        this.#lost(text);
        return;
      }
      const current = parseRecord(text)!;
      await this.#write(renewRecord(current, process.pid, this.options.holder, this.now()));
    } catch (error) {
      // A renewal that fails (the server away, a full disk) is tried again; past the lease, another
      // host may rightly have taken the home, so this process can no longer vouch for it.
      const late = this.mono() - this.#lastRenewal;
      if (late > this.timing.leaseMs) {
        this.#lostWith(
          new StrataError('HOME_HELD_BY_HOST', {
            message: `the lease on the Strata home ${this.home} could not be renewed for ${Math.round(late / 1000)} s (${(error as Error).message}): another host may be using it now, so this process stops using it`,
            details: { home: this.home, reason: 'lease not renewed' },
          }),
        );
      }
    }
  }

  #lost(text: string): void {
    const other = parseRecord(text);
    const who = other === null ? 'a process that left no readable record' : `${describeHost(other, this.self)} (\`${other.holder}\`, pid ${other.pid})`;
    this.#lostWith(
      new StrataError('HOME_HELD_BY_HOST', {
        message: `the Strata home ${this.home} was taken over by ${who} while this process used it (it was frozen or cut off for longer than the ${Math.round(this.timing.leaseMs / 1000)} s lease): it stops using the home at once`,
        details: { home: this.home, reason: 'taken over', ...(other === null ? {} : { host: other.host, pid: other.pid }) },
      }),
    );
  }

  #lostWith(error: StrataError): void {
    if (this.#released) return;
    this.#released = true;
    clearInterval(this.#timer);
    this.close();
    (this.options.onLost ?? defaultOnLost)(error);
  }

  status(): HomeClaimStatus {
    const record = this.#record;
    const network = this.fs?.network === true ? `${this.fs.fsType} (${this.fs.source})` : null;
    return {
      home: this.home,
      host: this.self.host,
      pid: record?.pid ?? process.pid,
      holder: record?.holder ?? this.options.holder,
      since: record?.since ?? '',
      keeper: this.#keeper,
      locks: this.#locks,
      leaseMs: this.timing.leaseMs,
      renewMs: this.timing.renewMs,
      network,
    };
  }

  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    clearInterval(this.#timer);
    await this.#ticking;
    try {
      if (this.#keeper && this.#native !== null) {
        this.#lock(USERS_BYTE, UNLOCK);
        // Nobody else uses the home (their shared locks would refuse this): say so, so that another
        // host need not wait for the lease to lapse. Without locks nothing can tell, so it lapses.
        if (this.#lock(USERS_BYTE, EXCLUSIVE) === 0) {
          const text = await this.#read();
          if (stillOurs(text, this.self)) {
            const current = parseRecord(text)!;
            await this.#write({ ...current, released: true, renewedAt: new Date(this.now()).toISOString() });
          }
        }
      }
    } finally {
      this.close();
    }
  }

  /** Closing the descriptor drops every lock it holds. */
  close(): void {
    try {
      closeSync(this.fd);
    } catch {
      // closed already
    }
  }
}

/** For tests and `strata status`: the record in the home's lock file, or null. */
export async function readHomeRecord(home: string): Promise<LeaseRecord | null> {
  return parseRecord(await readFile(homeLockFile(home), 'utf8').catch(() => ''));
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
