// The one decision behind every "in sync" (daemon/sync/sync-verdict.ts): no fact that keeps the two
// sides apart may leave it true, and each one is named.
import { describe, expect, it } from 'vitest';
import { judgeSync, type SyncFacts, type SyncReasonCode } from '../daemon/sync/sync-verdict.js';

const inStep: SyncFacts = {
  starting: false,
  stoppedLoop: null,
  paused: null,
  offline: null,
  capturing: 0,
  notPushed: 0,
  readOnly: false,
  serverAhead: false,
  diskBehind: false,
  notOnDisk: { count: 0, example: null },
  localGuard: null,
  heldIncoming: null,
  refused: { count: 0, example: null },
  skipped: {},
  unrepresentable: { count: 0, example: null },
};

const cases: Array<[string, Partial<SyncFacts>, SyncReasonCode, boolean]> = [
  ['starting', { starting: true }, 'STARTING', false],
  ['a loop stopped', { stoppedLoop: 'pull' }, 'LOOP_STOPPED', true],
  ['paused', { paused: 'the server refused the API key (401)' }, 'PAUSED', true],
  ['offline', { offline: { message: 'ECONNREFUSED', retryAt: null }, serverAhead: null }, 'OFFLINE', false],
  ['edits not versioned', { capturing: 2 }, 'CAPTURING', false],
  ['versions not pushed', { notPushed: 3 }, 'NOT_PUSHED', false],
  ['read-only with versions queued', { readOnly: true, notPushed: 1 }, 'READ_ONLY', true],
  ['the server ahead', { serverAhead: true }, 'NOT_PULLED', false],
  ['the server not asked', { serverAhead: null }, 'PULL_UNCONFIRMED', false],
  ['the disk behind the engine', { diskBehind: true }, 'NOT_ON_DISK', false],
  ['paths not written here', { notOnDisk: { count: 2, example: 'big1.bin' } }, 'WRITE_FAILED', true],
  ["this workstation's delete guard", { localGuard: { missing: 1990, since: '2026-11-28T10:00:00Z' } }, 'LOCAL_GUARD', true],
  ['incoming deletions held', { heldIncoming: { deletes: 77, files: 100 } }, 'HELD', true],
  ['versions refused', { refused: { count: 1, example: 'x' } }, 'REFUSED', true],
  ['versions skipped', { skipped: { "'fd' is a directory": 1 } }, 'SKIPPED', true],
  ['names not representable', { unrepresentable: { count: 1, example: 'bad\\xff' } }, 'UNREPRESENTABLE', true],
];

describe('judgeSync', () => {
  it('is in sync only when no fact keeps the sides apart', () => {
    expect(judgeSync(inStep)).toEqual({ inSync: true, reasons: [] });
  });

  it.each(cases)('%s: not in sync, with its reason', (_name, facts, code, needsYou) => {
    const verdict = judgeSync({ ...inStep, ...facts });
    expect(verdict.inSync).toBe(false);
    const reason = verdict.reasons.find((r) => r.code === code);
    expect(reason, JSON.stringify(verdict.reasons)).toBeDefined();
    expect(reason!.needsYou).toBe(needsYou);
    expect(reason!.message.length).toBeGreaterThan(10);
  });

  it("a refusal says the server's cause, not just a count (issue 38: \"refused 1 version\" said nothing to act on)", () => {
    const reason = "'a (conflict wsC 2026-11-29 0540)/a' is a file, so 'a (conflict wsC 2026-11-29 0540)/a/a' cannot be created below it (PATH_EXISTS)";
    const { reasons } = judgeSync({ ...inStep, refused: { count: 1, example: 'a/a/a', reason } });
    expect(reasons.find((r) => r.code === 'REFUSED')?.message).toContain(`"a/a/a" (the server said: ${reason})`);
  });

  it('a read-only workstation with nothing of its own queued agrees with the server', () => {
    expect(judgeSync({ ...inStep, readOnly: true }).inSync).toBe(true);
  });

  it('a path in the way needs the user only once nothing is in flight (a push or pull under way may clear it); a full disk at once, unless room came back', () => {
    const inTheWay = { notOnDisk: { count: 1, example: 'a' }, skipped: { "'a' is a directory": 1 } };
    for (const working of [{ notPushed: 1 }, { serverAhead: true }, { serverAhead: null }, { capturing: 1 }, { diskBehind: true }, { starting: true }, { offline: { message: 'ECONNREFUSED', retryAt: null } }] as Array<Partial<SyncFacts>>) {
      const { inSync, reasons } = judgeSync({ ...inStep, ...inTheWay, ...working });
      expect(inSync).toBe(false);
      expect(reasons.filter((r) => r.code === 'WRITE_FAILED' || r.code === 'SKIPPED').map((r) => r.needsYou), JSON.stringify(working)).toEqual([false, false]);
    }
    const full = judgeSync({ ...inStep, notPushed: 1, notOnDisk: { count: 1, example: 'big', diskFull: 1 } });
    expect(full.reasons.find((r) => r.code === 'WRITE_FAILED')?.needsYou).toBe(true);
    // Room came back: the host counts as behind until its retry, and the full disk is not the user's.
    const roomBack = judgeSync({ ...inStep, diskBehind: true, notOnDisk: { count: 1, example: 'big', diskFull: 1 } });
    expect(roomBack.reasons.find((r) => r.code === 'WRITE_FAILED')?.needsYou).toBe(false);
  });

  it('puts what needs the user before what sync is working on', () => {
    const { reasons } = judgeSync({ ...inStep, notPushed: 5, serverAhead: true, localGuard: { missing: 30, since: null } });
    expect(reasons.map((r) => r.code)).toEqual(['LOCAL_GUARD', 'NOT_PUSHED', 'NOT_PULLED']);
  });
});
