// The steps of the sync model (issue 38): a filesystem operation on one workstation (fs-ops.ts, the
// same as the single-workstation model's, less ignored names), a command of one workstation's
// (snapshot, snapshot restore, restore of a file to one of its versions, tag, untag, retention), a
// fault (the server stopped or killed and started again, a daemon killed, a workstation offline and
// back, a workstation's key refused and given back, the second workstation's disk full and freed),
// or an observation point (`strata sync wait` everywhere, judged against the trees at that moment).
// Plain data, so a failure prints as JSON and replays.

import fc from 'fast-check';
import { describeFsOp, type FsOp, fsOpArbitrary, gapArbitrary, SLOTS } from './fs-ops.js';

export type SyncAction =
  | { op: 'fs'; ws: number; fs: FsOp }
  | { op: 'serverDown'; kill: boolean }
  | { op: 'serverUp' }
  | { op: 'kill9'; ws: number; restart: boolean }
  | { op: 'offline'; ws: number }
  | { op: 'online'; ws: number }
  | { op: 'snapshot'; ws: number }
  | { op: 'restoreSnapshot'; ws: number; pick: number }
  | { op: 'restoreVersion'; ws: number; slot: number; pick: number }
  | { op: 'tag'; ws: number; pick: number; name: number }
  | { op: 'untag'; ws: number; name: number }
  | { op: 'retention'; ws: number; keep: number }
  | { op: 'refuseKey'; ws: number }
  | { op: 'restoreKey'; ws: number }
  | { op: 'diskFull' }
  | { op: 'diskFree' }
  | { op: 'observe' };

export type SyncStep = { gap: number; action: SyncAction };

/**
 * Ignored names (*.swp, .git/) are left out: one left on a workstation keeps a directory there that
 * another workstation replaced by a file, which Strata rightly cannot resolve without the user —
 * not a defect, and it would drown the others.
 */
const syncFsOp = fsOpArbitrary.filter((op) => op.op !== 'ignored');

const pick = fc.nat({ max: 9 });

export function syncStepArbitrary(workstations: number): fc.Arbitrary<SyncStep> {
  const ws = fc.nat({ max: workstations - 1 });
  const action: fc.Arbitrary<SyncAction> = fc.oneof(
    { weight: 24, arbitrary: fc.record({ op: fc.constant('fs' as const), ws, fs: syncFsOp }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('observe' as const) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('serverDown' as const), kill: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('serverUp' as const) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('kill9' as const), ws, restart: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('offline' as const), ws }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('online' as const), ws }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('snapshot' as const), ws }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('restoreSnapshot' as const), ws, pick }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('restoreVersion' as const), ws, slot: fc.nat({ max: SLOTS.length - 1 }), pick }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('tag' as const), ws, pick, name: fc.nat({ max: 3 }) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('untag' as const), ws, name: fc.nat({ max: 3 }) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('retention' as const), ws, keep: fc.constantFrom(0, 1, 3) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('refuseKey' as const), ws }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('restoreKey' as const), ws }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('diskFull' as const) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('diskFree' as const) }) },
  );
  return fc.record({ gap: gapArbitrary, action });
}

export function syncSequenceArbitrary(workstations: number, maxSteps: number): fc.Arbitrary<SyncStep[]> {
  // Without bias, as the single model: the defects are in the longer interleavings.
  return fc.noBias(fc.array(syncStepArbitrary(workstations), { minLength: 1, maxLength: maxSteps, size: 'max' }));
}

export const WS_NAMES = ['wsA', 'wsB', 'wsC'] as const;

export function describeSyncStep(step: SyncStep): string {
  const gap = step.gap > 0 ? `sleep ${step.gap / 1000}; ` : '';
  const { action } = step;
  switch (action.op) {
    case 'fs':
      return `${gap}${WS_NAMES[action.ws]}: ${describeFsOp(action.fs)}`;
    case 'serverDown':
      return `${gap}server: ${action.kill ? 'kill -9' : 'stop'}`;
    case 'serverUp':
      return `${gap}server: start`;
    case 'kill9':
      return `${gap}${WS_NAMES[action.ws]}: kill -9 daemon${action.restart ? '; restart' : ''}`;
    case 'offline':
      return `${gap}${WS_NAMES[action.ws]}: stop daemon (offline)`;
    case 'online':
      return `${gap}${WS_NAMES[action.ws]}: start daemon`;
    case 'snapshot':
      return `${gap}${WS_NAMES[action.ws]}: strata snapshot create`;
    case 'restoreSnapshot':
      return `${gap}${WS_NAMES[action.ws]}: strata snapshot restore <snapshot #${action.pick} of its list>`;
    case 'restoreVersion':
      return `${gap}${WS_NAMES[action.ws]}: strata restore <version #${action.pick} of ${SLOTS[action.slot]}>`;
    case 'tag':
      return `${gap}${WS_NAMES[action.ws]}: strata tag add <snapshot #${action.pick}> t${action.name}`;
    case 'untag':
      return `${gap}${WS_NAMES[action.ws]}: strata tag rm t${action.name}`;
    case 'retention':
      return `${gap}${WS_NAMES[action.ws]}: strata retention set ${action.keep}`;
    case 'refuseKey':
      return `${gap}server: revoke ${WS_NAMES[action.ws]}'s key`;
    case 'restoreKey':
      return `${gap}${WS_NAMES[action.ws]}: a new key; strata init DIR --server URL --project ID`;
    case 'diskFull':
      return `${gap}wsB: its disk fills up`;
    case 'diskFree':
      return `${gap}wsB: its disk is freed`;
    case 'observe':
      return `${gap}observe: sync wait on every running workstation`;
  }
}
