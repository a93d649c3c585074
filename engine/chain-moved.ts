// What both repositories' importChain (a git push applied) say when the project moved under the push,
// and how git-receive tells the one case it can judge again.
import { isStrataError, StrataError } from './errors.js';

const MOVED = 'The project changed while the push was applied; pull and push again';

/** The chain's tip is no longer the snapshot the push was planned on (another push landed first). */
export function chainMoved(expectedTip: string | null, currentTip: string | null): StrataError {
  return new StrataError('STALE_BASE_VERSION', { message: MOVED, details: { expectedTip, currentTip } });
}

/** A pushed record's precondition failed: its path changed since the push was planned. */
export function recordMoved(path: string): StrataError {
  return new StrataError('STALE_BASE_VERSION', { message: MOVED, details: { path } });
}

/** Whether `error` is chainMoved's: the chain's tip moved (a push landed meanwhile, often the same one). */
export function isChainMoved(error: unknown): boolean {
  return isStrataError(error, 'STALE_BASE_VERSION') && error.details !== undefined && 'currentTip' in error.details;
}
