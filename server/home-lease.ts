// The lease part of a home's claim (home-claim.ts): what `<home>/home.lock` says, and what a reader
// concludes from it. Pure: the clock is the caller's, so the rules are tested with a frozen one.
//
// The host that uses a home writes its identity there and renews the record every `renewMs`. Another
// host may take the home only once the record has gone unrenewed for the lease plus a margin by ITS
// clock (clocks of a cluster's nodes agree to well under a second with NTP; the margin covers one that
// drifted), and only after it has itself watched the record stay unchanged for `observeMs` on its
// monotonic clock: a holder whose clock runs far behind writes old-looking times, but it still changes
// the record every `renewMs`, which the watcher sees without comparing clocks at all.
//
// Defaults: 60 s lease, renewed every 10 s; another host takes over 90 s after the last renewal at the
// earliest (NFSv4 servers keep a vanished client's locks for its 90 s lease too), having watched for
// 15 s. STRATA_HOME_LEASE_MS scales all of them (the tests use a few seconds).

import type { HostIdentity } from './host-identity.js';
import { sameHost } from './host-identity.js';

export const DEFAULT_LEASE_MS = 60_000;

export interface LeaseTiming {
  /** how long a record vouches for its host after its last renewal */
  leaseMs: number;
  /** how often the holder renews */
  renewMs: number;
  /** added to the lease before another host counts it as lapsed (clock drift between hosts) */
  marginMs: number;
  /** how long another host watches a lapsed record stay unchanged before it takes over */
  observeMs: number;
}

export function leaseTiming(leaseMs: number = DEFAULT_LEASE_MS): LeaseTiming {
  if (!Number.isFinite(leaseMs) || leaseMs < 600) throw new TypeError(`a lease must be at least 600 ms, got ${leaseMs}`);
  const renewMs = Math.round(leaseMs / 6);
  return { leaseMs, renewMs, marginMs: Math.round(leaseMs / 2), observeMs: Math.round(renewMs * 1.5) };
}

/** STRATA_HOME_LEASE_MS when it is a number of milliseconds (at least 600), else the default. */
export function leaseMsFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const value = Number(env['STRATA_HOME_LEASE_MS']);
  return Number.isFinite(value) && value >= 600 ? value : DEFAULT_LEASE_MS;
}

export interface LeaseRecord extends HostIdentity {
  v: 1;
  /** the process that keeps the lease (renews it) on that host */
  pid: number;
  /** what it is: 'strata daemon', 'strata serve', 'strata fsck' ... */
  holder: string;
  /** since when that host has held the home (ISO) */
  since: string;
  /** the last renewal, by the holder's clock (ISO) */
  renewedAt: string;
  leaseMs: number;
  /** renewals so far: a reader sees the holder alive by this changing, whatever the clocks say */
  seq: number;
  /** the host let the home go (a clean stop with nothing of it still running): anyone may take it */
  released: boolean;
}

/** The file's fixed size: records are written in place (pwrite) so a reader never finds it empty. */
export const RECORD_BYTES = 1024;

export function encodeRecord(record: LeaseRecord): Buffer {
  const json = JSON.stringify(record);
  if (Buffer.byteLength(json) > RECORD_BYTES - 1) throw new TypeError('a lease record must fit in 1 KiB');
  const out = Buffer.alloc(RECORD_BYTES, 0x20);
  out.write(json, 0, 'utf8');
  out[RECORD_BYTES - 1] = 0x0a;
  return out;
}

/** The record in `text`, or null when the text is not one (empty, torn, someone else's file). */
export function parseRecord(text: string): LeaseRecord | null {
  let value: unknown;
  try {
    value = JSON.parse(text.trim());
  } catch {
    return null;
  }
  if (value === null || typeof value !== 'object') return null;
  const r = value as Partial<LeaseRecord>;
  const strings = [r.host, r.machineId, r.bootId, r.pidNs, r.holder, r.since, r.renewedAt];
  if (r.v !== 1 || strings.some((s) => typeof s !== 'string')) return null;
  if (typeof r.pid !== 'number' || typeof r.leaseMs !== 'number' || typeof r.seq !== 'number') return null;
  if (Number.isNaN(Date.parse(r.renewedAt!)) || Number.isNaN(Date.parse(r.since!))) return null;
  return { ...(r as LeaseRecord), released: r.released === true };
}

export function newRecord(self: HostIdentity, pid: number, holder: string, nowMs: number, leaseMs: number, since?: string): LeaseRecord {
  const at = new Date(nowMs).toISOString();
  return {
    v: 1,
    host: self.host,
    machineId: self.machineId,
    bootId: self.bootId,
    pidNs: self.pidNs,
    pid,
    holder,
    since: since ?? at,
    renewedAt: at,
    leaseMs,
    seq: 0,
    released: false,
  };
}

export function renewRecord(record: LeaseRecord, pid: number, holder: string, nowMs: number): LeaseRecord {
  return { ...record, pid, holder, renewedAt: new Date(nowMs).toISOString(), seq: record.seq + 1, released: false };
}

export type LeaseVerdict =
  /** no record, or its host let the home go */
  | { kind: 'free'; record: LeaseRecord | null }
  /** this host's record (a process of this host keeps it, or kept it) */
  | { kind: 'ours'; record: LeaseRecord }
  /** another host's, renewed recently enough that it may be using the home right now */
  | { kind: 'live'; record: LeaseRecord; lapsesInMs: number }
  /** another host's, unrenewed for longer than its lease and the margin: takeable after watching it */
  | { kind: 'lapsed'; record: LeaseRecord; lapsedForMs: number }
  /** a file that is not a record (torn by a crash mid-write, or not ours): takeable after watching it */
  | { kind: 'unreadable' };

/**
 * What `text` (the lock file's content; '' when there is none) means to `self` at `nowMs`. The lease
 * length is the longer of the record's and the reader's, so a host configured with a long lease is
 * not cut short by one configured with a short one.
 */
export function judgeLease(text: string, self: HostIdentity, nowMs: number, timing: LeaseTiming): LeaseVerdict {
  if (text.trim() === '') return { kind: 'free', record: null };
  const record = parseRecord(text);
  if (record === null) return { kind: 'unreadable' };
  if (record.released) return { kind: 'free', record };
  if (sameHost(record, self)) return { kind: 'ours', record };
  const leaseMs = Math.max(record.leaseMs, timing.leaseMs);
  const margin = Math.max(timing.marginMs, Math.round(leaseMs / 2));
  const age = nowMs - Date.parse(record.renewedAt);
  const lapsesInMs = leaseMs + margin - age;
  return lapsesInMs > 0 ? { kind: 'live', record, lapsesInMs } : { kind: 'lapsed', record, lapsedForMs: -lapsesInMs };
}

/**
 * Watches the lock file's text on the reader's monotonic clock: how long it has stayed exactly the
 * same. A holder that is alive changes it every renewMs.
 */
export class LeaseObserver {
  #text: string | null = null;
  #since = 0;

  /** Notes a read at monotonic `nowMs`; returns how long this text has been seen unchanged. */
  note(text: string, nowMs: number): number {
    if (text !== this.#text) {
      this.#text = text;
      this.#since = nowMs;
    }
    return nowMs - this.#since;
  }
}

/** Whether the keeper of `mine` still holds the home, given what the file says now. */
export function stillOurs(text: string, self: HostIdentity): boolean {
  const record = parseRecord(text);
  return record !== null && !record.released && sameHost(record, self);
}
