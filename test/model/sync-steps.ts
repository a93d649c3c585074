// The steps of the sync model (issue 38): a filesystem operation on one workstation (fs-ops.ts, the
// same as the single-workstation model's, less ignored names), a fault (the server stopped or
// killed and started again, a daemon killed, a workstation offline and back), or an observation
// point (`strata sync wait` everywhere, judged against the trees at that moment). Plain data, so a
// failure prints as JSON and replays.

import fc from 'fast-check';
import { describeFsOp, type FsOp, fsOpArbitrary, gapArbitrary } from './fs-ops.js';

export type SyncAction =
  | { op: 'fs'; ws: number; fs: FsOp }
  | { op: 'serverDown'; kill: boolean }
  | { op: 'serverUp' }
  | { op: 'kill9'; ws: number; restart: boolean }
  | { op: 'offline'; ws: number }
  | { op: 'online'; ws: number }
  | { op: 'observe' };

export type SyncStep = { gap: number; action: SyncAction };

/**
 * Ignored names (*.swp, .git/) are left out: one left on a workstation keeps a directory there that
 * another workstation replaced by a file, which Strata rightly cannot resolve without the user —
 * not a defect, and it would drown the others.
 */
const syncFsOp = fsOpArbitrary.filter((op) => op.op !== 'ignored');

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
    case 'observe':
      return `${gap}observe: sync wait on every running workstation`;
  }
}
