// The incoming mass-delete guard (daemon/sync/incoming-guard.ts) judges the deletions the server's
// changes made here lately together with the page at hand, and what it reports as held is that
// page's deletions only: the files still here. The ones applied before it are `recent`.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type DaemonState, openDaemonState } from '../daemon/state.js';
import { incomingDeleteGuard } from '../daemon/sync/incoming-guard.js';

describe('incoming mass-delete guard', () => {
  let dir: string;
  let state: DaemonState;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'strata-guard-'));
    state = openDaemonState(join(dir, 'state.sqlite'));
  });
  afterEach(async () => {
    state.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('admits deletions under the thresholds (fewer than 20 in all, or a quarter of the files)', () => {
    const guard = incomingDeleteGuard(state, 'p');
    expect(guard.admit(10, 1000)).toBe(true);
    expect(guard.admit(5, 990)).toBe(true); // 15 in the window: under 20
    expect(guard.admit(200, 985)).toBe(true); // 215 of 1,000: 21.5 %
    expect(guard.held()).toBeNull();
  });

  it('holds a page that, with the recent ones, deletes more than a quarter; `deletes` is the page, `recent` the rest', () => {
    const guard = incomingDeleteGuard(state, 'p');
    expect(guard.admit(100, 1000)).toBe(true); // 10 %
    expect(guard.admit(200, 900)).toBe(false); // 300 of 1,000 within minutes: held
    expect(guard.held()).toEqual({ deletes: 200, files: 1000, recent: 100 });
    // Still held when the same page comes again; confirmed, it is applied, and so is what follows.
    expect(guard.admit(200, 900)).toBe(false);
    guard.confirm();
    expect(guard.held()).toBeNull();
    expect(guard.admit(200, 900)).toBe(true);
    expect(guard.admit(500, 700)).toBe(true);
    // Read to its end: the confirmation covers no more. What was confirmed never counts again: the
    // next deletion is judged alone (1 held right after a confirmed 30 counted those 30 as recent).
    guard.caughtUp();
    expect(guard.admit(1, 200)).toBe(true);
    expect(guard.admit(100, 199)).toBe(false);
    expect(guard.held()).toEqual({ deletes: 100, files: 200, recent: 1 });
  });

  it('a confirmed deletion of 30 is not "recent" for the next one', () => {
    const guard = incomingDeleteGuard(state, 'p');
    expect(guard.admit(30, 60)).toBe(false);
    guard.confirm();
    expect(guard.admit(30, 60)).toBe(true);
    guard.caughtUp();
    expect(guard.admit(1, 30)).toBe(true);
    expect(guard.held()).toBeNull();
  });

  it('judges the deletions read ahead with the page, but remembers only the page', () => {
    const guard = incomingDeleteGuard(state, 'p');
    expect(guard.admit(10, 1000, 300)).toBe(false); // 310 of 1,000 in the change set
    expect(guard.held()).toEqual({ deletes: 310, files: 1000 });
    expect(guard.admit(10, 1000, 100)).toBe(true); // 11 %
    expect(guard.admit(10, 990)).toBe(true); // 20 counted, not 120
    expect(guard.admit(240, 980)).toBe(false); // 260 of 1,000
    expect(guard.held()).toEqual({ deletes: 240, files: 1000, recent: 20 });
  });
});
