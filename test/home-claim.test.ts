// A home is used from one host at a time (server/home-claim.ts, issue 38 item 12): the lease rules
// with a frozen clock, and the claim on a real file with real fcntl locks, where two "hosts" are two
// claims in this process with different identities (OFD locks of two descriptors conflict even within
// one process, as they do between two nodes that mount one NFS export).

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StrataError } from '../engine/errors.js';
import { claimHome, homeLockFile } from '../server/home-claim.js';
import { encodeRecord, judgeLease, LeaseObserver, leaseTiming, newRecord, parseRecord, renewRecord } from '../server/home-lease.js';
import type { HostIdentity } from '../server/host-identity.js';
import { tempDir } from './cli-harness.js';
import { waitFor } from './daemon-harness.js';

const NODE1: HostIdentity = { host: 'node1', machineId: 'm-image', bootId: 'boot-1', pidNs: 'pid:[1]' };
const NODE2: HostIdentity = { host: 'node2', machineId: 'm-image', bootId: 'boot-2', pidNs: 'pid:[1]' };
const T0 = Date.parse('2026-12-01T10:00:00.000Z');

function text(record: ReturnType<typeof newRecord>): string {
  return encodeRecord(record).toString('utf8');
}

async function refusal(promise: Promise<unknown>): Promise<StrataError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StrataError);
  return error as StrataError;
}

describe('the lease, by a frozen clock', () => {
  const timing = leaseTiming(60_000);

  it('derives the renewal, margin and watch from the lease', () => {
    expect(timing).toEqual({ leaseMs: 60_000, renewMs: 10_000, marginMs: 30_000, observeMs: 15_000 });
    expect(() => leaseTiming(10)).toThrow(TypeError);
  });

  it('judges: nothing, released, this host, live, lapsed only past lease + margin, unreadable', () => {
    expect(judgeLease('', NODE2, T0, timing)).toEqual({ kind: 'free', record: null });
    const held = newRecord(NODE1, 4242, 'strata daemon', T0, 60_000);
    expect(judgeLease(text({ ...held, released: true }), NODE2, T0, timing).kind).toBe('free');
    expect(judgeLease(text(held), NODE1, T0 + 3_600_000, timing).kind).toBe('ours');
    expect(judgeLease(text(held), NODE2, T0 + 1_000, timing)).toMatchObject({ kind: 'live', lapsesInMs: 89_000 });
    // 60 s lease + 30 s margin: still live at 89.999 s, lapsed after 90 s.
    expect(judgeLease(text(held), NODE2, T0 + 89_999, timing).kind).toBe('live');
    expect(judgeLease(text(held), NODE2, T0 + 90_001, timing)).toMatchObject({ kind: 'lapsed', lapsedForMs: 1 });
    expect(judgeLease('{"v":1,"host":"node1","pid":', NODE2, T0, timing).kind).toBe('unreadable');
    expect(judgeLease('not a record', NODE2, T0, timing).kind).toBe('unreadable');
  });

  it('a host with a longer lease is not cut short by a reader configured shorter', () => {
    const held = newRecord(NODE1, 1, 'strata daemon', T0, 600_000);
    expect(judgeLease(text(held), NODE2, T0 + 120_000, leaseTiming(6_000)).kind).toBe('live');
  });

  it('another boot, another pid namespace or another name is another host; the same four are this host', () => {
    const held = text(newRecord(NODE1, 1, 'strata daemon', T0, 60_000));
    expect(judgeLease(held, { ...NODE1, bootId: 'boot-9' }, T0, timing).kind).toBe('live');
    expect(judgeLease(held, { ...NODE1, pidNs: 'pid:[2]' }, T0, timing).kind).toBe('live');
    expect(judgeLease(held, { ...NODE1, host: 'node9' }, T0, timing).kind).toBe('live');
    expect(judgeLease(held, { ...NODE1 }, T0, timing).kind).toBe('ours');
  });

  it('renewals change the record: a watcher sees a live holder without comparing clocks', () => {
    const first = newRecord(NODE1, 7, 'strata serve', T0, 60_000);
    // A holder whose clock runs an hour behind: its times look lapsed, its renewals do not.
    const renewed = renewRecord(first, 7, 'strata serve', T0 + 10_000);
    expect(renewed.seq).toBe(1);
    expect(renewed.since).toBe(first.since);
    const observer = new LeaseObserver();
    expect(observer.note(text(first), 0)).toBe(0);
    expect(observer.note(text(first), 9_000)).toBe(9_000);
    expect(observer.note(text(renewed), 10_000)).toBe(0);
    expect(observer.note(text(renewed), 25_000)).toBe(15_000);
    expect(parseRecord(text(renewed))).toEqual(renewed);
  });
});

describe('the claim on a real lock file', () => {
  const LEASE = 1_200; // renew 200 ms, margin 600 ms, watch 300 ms

  it('a second host is refused, naming the first, its pid and since when; a clean release frees the home at once', async () => {
    const dir = await tempDir('strata-claim-');
    try {
      const home = join(dir.path, 'home');
      const first = await claimHome(home, { holder: 'strata daemon', self: NODE1, leaseMs: LEASE });
      const record = parseRecord(await readFile(homeLockFile(home), 'utf8'))!;
      expect(record).toMatchObject({ host: 'node1', pid: process.pid, holder: 'strata daemon', released: false });
      const error = await refusal(claimHome(home, { holder: 'strata daemon', self: NODE2, leaseMs: LEASE }));
      expect(error.code).toBe('HOME_HELD_BY_HOST');
      expect(error.details).toMatchObject({ host: 'node1', pid: process.pid, holder: 'strata daemon', since: record.since });
      expect(error.message).toContain('in use on host node1');
      expect(first.status()).toMatchObject({ keeper: true, locks: 'shared', host: 'node1' });
      await first.release();
      expect(parseRecord(await readFile(homeLockFile(home), 'utf8'))?.released).toBe(true);
      const second = await claimHome(home, { holder: 'strata daemon', self: NODE2, leaseMs: LEASE });
      expect(parseRecord(await readFile(homeLockFile(home), 'utf8'))).toMatchObject({ host: 'node2', released: false });
      await second.release();
    } finally {
      await dir.remove();
    }
  });

  it('a dead host\'s lease is taken only once it lapsed by this host\'s clock and stayed unchanged while watched', async () => {
    const dir = await tempDir('strata-claim-');
    try {
      const home = join(dir.path, 'home');
      const claim0 = await claimHome(home, { holder: 'strata daemon', self: NODE1, leaseMs: LEASE });
      await claim0.release();
      // What a host that died holding the home leaves: its record, unreleased; no lock (the kernel or
      // the NFS server dropped them with the process).
      const dead = newRecord(NODE1, 999_999, 'strata daemon', T0, LEASE);
      await writeFile(homeLockFile(home), encodeRecord(dead));
      let now = T0 + 1_000;
      const clock = { now: () => now };
      const live = await refusal(claimHome(home, { holder: 'strata daemon', self: NODE2, leaseMs: LEASE, ...clock }));
      expect(live.code).toBe('HOME_HELD_BY_HOST');
      expect(live.details).toMatchObject({ host: 'node1', pid: 999_999 });
      now = T0 + 1_799; // 1.2 s lease + 0.6 s margin: not yet
      expect((await refusal(claimHome(home, { holder: 'strata daemon', self: NODE2, leaseMs: LEASE, ...clock }))).code).toBe('HOME_HELD_BY_HOST');
      now = T0 + 1_801;
      const waits: string[] = [];
      const started = performance.now();
      const taken = await claimHome(home, { holder: 'strata daemon', self: NODE2, leaseMs: LEASE, ...clock, onWait: (m) => waits.push(m) });
      expect(performance.now() - started).toBeGreaterThanOrEqual(leaseTiming(LEASE).observeMs - 5);
      expect(waits).toHaveLength(1);
      expect(waits[0]).toContain('host node1');
      expect(parseRecord(await readFile(homeLockFile(home), 'utf8'))).toMatchObject({ host: 'node2', pid: process.pid });
      await taken.release();
    } finally {
      await dir.remove();
    }
  });

  it('a lapsed lease whose holder still holds the file locks (frozen, or cut off) is not taken', async () => {
    const dir = await tempDir('strata-claim-');
    try {
      const home = join(dir.path, 'home');
      // node1's clock stands still: its renewals write the same old time, as a frozen process would
      // have left it; node2's clock is far ahead.
      const frozen = await claimHome(home, { holder: 'strata daemon', self: NODE1, leaseMs: LEASE, now: () => T0 });
      const error = await refusal(claimHome(home, { holder: 'strata daemon', self: NODE2, leaseMs: LEASE, now: () => T0 + 3_600_000 }));
      expect(error.code).toBe('HOME_HELD_BY_HOST');
      expect(error.message).toContain('still shows its processes holding the home');
      await frozen.release();
    } finally {
      await dir.remove();
    }
  });

  it('processes of one host share the home; when the keeper goes, another takes over renewing', async () => {
    const dir = await tempDir('strata-claim-');
    try {
      const home = join(dir.path, 'home');
      const daemon = await claimHome(home, { holder: 'strata daemon', self: NODE1, leaseMs: LEASE });
      const serve = await claimHome(home, { holder: 'strata serve', self: NODE1, leaseMs: LEASE });
      expect(daemon.status().keeper).toBe(true);
      expect(serve.status().keeper).toBe(false);
      await daemon.release();
      // Another process still uses the home: not released.
      expect(parseRecord(await readFile(homeLockFile(home), 'utf8'))?.released).toBe(false);
      await waitFor('the serve claim to keep the lease', () => (serve.status().keeper ? true : undefined), 10_000);
      await waitFor('a renewal by serve', async () => (parseRecord(await readFile(homeLockFile(home), 'utf8'))?.holder === 'strata serve' ? true : undefined), 10_000);
      expect((await refusal(claimHome(home, { holder: 'strata daemon', self: NODE2, leaseMs: LEASE }))).code).toBe('HOME_HELD_BY_HOST');
      await serve.release();
      expect(parseRecord(await readFile(homeLockFile(home), 'utf8'))?.released).toBe(true);
    } finally {
      await dir.remove();
    }
  });

  it('two hosts claiming a free home at once: exactly one gets it', async () => {
    const dir = await tempDir('strata-claim-');
    try {
      const home = join(dir.path, 'home');
      const results = await Promise.allSettled([
        claimHome(home, { holder: 'strata daemon', self: NODE1, leaseMs: LEASE }),
        claimHome(home, { holder: 'strata daemon', self: NODE2, leaseMs: LEASE }),
      ]);
      const won = results.filter((r) => r.status === 'fulfilled');
      expect(won).toHaveLength(1);
      const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect((lost.reason as StrataError).code).toBe('HOME_HELD_BY_HOST');
      await (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof claimHome>>>).value.release();
    } finally {
      await dir.remove();
    }
  });

  it('without file locks (lease only): a keeper that finds its home taken stops at once', async () => {
    const dir = await tempDir('strata-claim-');
    try {
      const home = join(dir.path, 'home');
      const lost: StrataError[] = [];
      const claim = await claimHome(home, { holder: 'strata daemon', self: NODE1, leaseMs: LEASE, fileLocks: false, onLost: (e) => lost.push(e) });
      expect(claim.status().locks).toBe('none');
      // node2 took the home while node1 was frozen past its lease (nothing but the lease to stop it).
      await writeFile(homeLockFile(home), encodeRecord(newRecord(NODE2, 31337, 'strata daemon', Date.now(), LEASE)));
      const error = await waitFor('the loss to be noticed', () => lost[0], 10_000);
      expect(error.code).toBe('HOME_HELD_BY_HOST');
      expect(error.message).toContain('taken over by host node2');
      // It wrote nothing more: the record is node2's still.
      expect(parseRecord(await readFile(homeLockFile(home), 'utf8'))).toMatchObject({ host: 'node2', pid: 31337 });
      await claim.release();
    } finally {
      await dir.remove();
    }
  });
});
