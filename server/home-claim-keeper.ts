// The claim on a home's lock file while a process holds it (home-claim.ts says why and what): taking
// it (locks, then the lease, watching a lapsed one), renewing it, noticing it lost, letting it go.

import { closeSync, fdatasync, write } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { constants as os } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { type FsInfo, locksReachOtherHosts } from '../daemon/watch/fs-type.js';
import { StrataError } from '../engine/errors.js';
import { EXCLUSIVE, type LockAddon, SHARED, UNLOCK } from './file-locks.js';
import type { ClaimLocks, HomeClaim, HomeClaimOptions, HomeClaimStatus } from './home-claim.js';
import { encodeRecord, judgeLease, LeaseObserver, type LeaseRecord, type LeaseTiming, type LeaseVerdict, newRecord, parseRecord, renewRecord, stillOurs } from './home-lease.js';
import { describeHost, type HostIdentity } from './host-identity.js';

const writeAsync = promisify(write);
const fdatasyncAsync = promisify(fdatasync);

/** Past the record (which is 1 KiB): lock ranges may lie beyond the end of a file. */
const KEEPER_BYTE = 1 << 20;
const USERS_BYTE = KEEPER_BYTE + 1;

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

export class Claim implements HomeClaim {
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

